package election

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/session"
)

// Errors of the election package. The other errors a leadership returns
// are those every held key shares (package session: ErrLost, ErrKeyGone,
// ErrNotOwner, ErrGoneWhileWaiting, ErrClosed, ErrInvalidName,
// ErrNameInUse). Match them with errors.Is.
var (
	// ErrNoLeader is returned by Leader when no candidate holds the election.
	ErrNoLeader = errors.New("election: no leader")
	// ErrNotLeader is returned by Proclaim (and Resign) when the leader key
	// is no longer ours, and by Leadership.Txn when its IsOwner guard failed
	// (that error matches session.ErrNotOwner too).
	ErrNotLeader = errors.New("election: not leader")
	// ErrResigned is the cause of a Leadership that ended by Resign (or by
	// Election.Close).
	ErrResigned = errors.New("election: resigned")

	// ErrBadPolicy is returned by ParsePolicy and New for an unknown policy.
	ErrBadPolicy = errors.New("election: unknown policy")
	// ErrBadVersion is returned by New for a candidate version that is not
	// a semantic version.
	ErrBadVersion = errors.New("election: not a semantic version")
	// ErrNoCandidate is returned by ResignTo when no other candidate of
	// ours (one that publishes attributes) matches the target.
	ErrNoCandidate = errors.New("election: no such candidate")
	// ErrHandoverBlocked is returned by ResignTo when a foreign candidate
	// (etcdctl elect, concurrency.Election) is queued between the leader and
	// the target: it would not step aside, so resigning would make it lead.
	ErrHandoverBlocked = errors.New("election: handover blocked by a foreign candidate")
	// ErrTargetGone is returned by ResignTo when the target left the queue
	// before the leader resigned.
	ErrTargetGone = errors.New("election: handover target left")
)

// Best, given to ResignTo as the target's ID, hands over to the candidate
// the election's policy prefers among the others.
const Best = ""

// cleanupTimeout bounds the requests that undo a failed campaign or resign
// on Close; they run after the caller's context may have ended.
const cleanupTimeout = 5 * time.Second

// config is an Election's configuration: what every primitive has
// (primitive.Config, whose Validate holds the rules) and the policy.
type config struct {
	primitive.Config
	pref  Preference
	attrs *Attributes
}

// Option configures an Election.
type Option func(*config)

// WithTTL sets the TTL of the session each campaign creates (default
// session.DefaultTTL; bounds: session.CheckTTL). Not with WithSession.
func WithTTL(d time.Duration) Option { return func(c *config) { c.TTL = d } }

// WithSession makes every campaign use s instead of a session of its own.
// The Election never closes s: Resign deletes the leader key only. Once s
// has ended, Campaign returns session.ErrGoneWhileWaiting. Run one
// campaign at a time per session: two campaigns on one session share one
// key.
func WithSession(s *session.Session) Option { return func(c *config) { c.Session = s } }

// WithPrefix namespaces the election: its keys live under prefix+name+"/"
// instead of name+"/". The prefix is used as given (see lock.WithPrefix).
func WithPrefix(p string) Option { return func(c *config) { c.Prefix = p } }

// WithSessionOptions adds options to the sessions campaigns create (an
// observer for metrics, a margin, a clock). Not with WithSession.
func WithSessionOptions(opts ...session.Option) Option {
	return func(c *config) { c.SessionOptions = append(c.SessionOptions, opts...) }
}

// Election is one named election on etcd. It is safe for concurrent use;
// several Elections (in one process or many) campaign against each other.
type Election struct {
	client    *clientv3.Client
	name      string
	keyPrefix string
	cfg       config

	closeCtx context.Context
	closeFn  context.CancelFunc

	mu     sync.Mutex
	closed bool
	live   map[*Leadership]struct{}

	acting acting // Run's leaderships whose OnStartedLeading runs (health.go)
}

// Leader is the current holder of an election as etcd stores it.
type Leader struct {
	// Value is what the leader proclaimed (its identity, an address...).
	Value string
	// Token is the create revision of the leader key: the fencing token.
	Token fencing.Token
	// Key is the leader's key, prefix/name/<lease hex>.
	Key string
	// Lease is the lease the key lives on.
	Lease clientv3.LeaseID
}

// Observation is one change seen by Observe.
type Observation struct {
	// Leader is the new leader, or nil when there is none.
	Leader *Leader
	// Err is set, once, on the last observation when observing failed.
	Err error
}

// New returns the election called name on client. It does not talk to
// etcd. It refuses a name that cannot be what its user meant (an error
// wrapping session.ErrInvalidName that names the rule, as lock.New), a TTL
// out of bounds (session.ErrBadTTL), a given session
// with session options, ErrBadPolicy and ErrBadVersion.
func New(client *clientv3.Client, name string, opts ...Option) (*Election, error) {
	if client == nil {
		return nil, errors.New("election: nil etcd client")
	}
	cfg := config{Config: primitive.Config{Kind: primitive.KindElection, Name: name}}
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("election: %w", err)
	}
	if err := cfg.validateCoordination(name); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Election{
		client:    client,
		name:      name,
		keyPrefix: cfg.KeyPrefix(),
		cfg:       cfg,
		closeCtx:  ctx,
		closeFn:   cancel,
		live:      make(map[*Leadership]struct{}),
	}, nil
}

// Name returns the election's name.
func (e *Election) Name() string { return e.name }

// Close resigns every leadership this Election holds and makes Campaigns
// in progress, and later ones, return session.ErrClosed. It returns the first resign
// error. Calling it again is a no-op.
func (e *Election) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.closeFn()
	var live []*Leadership
	for l := range e.live {
		live = append(live, l)
	}
	e.mu.Unlock()
	var first error
	for _, l := range live {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		if err := l.Resign(ctx); err != nil && !errors.Is(err, ErrNotLeader) && first == nil {
			first = err
		}
		cancel()
	}
	return first
}

// Leader returns the current leader: the candidate (a key NAME/<lease hex>)
// with the lowest create revision. ErrNoLeader when there is none; a
// an error wrapping session.ErrNameInUse when a semaphore's or a
// read-write lock's key comes before any candidate (the name is theirs).
// Keys of a name below this one (NAME/child/...) are skipped.
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	first, _, err := e.leaderKV(ctx)
	if errors.Is(err, session.ErrNameInUse) {
		return Leader{}, err
	}
	if err != nil {
		return Leader{}, fmt.Errorf("election: get leader of %q: %w", e.name, err)
	}
	if first == nil {
		return Leader{}, ErrNoLeader
	}
	return leaderOf(first), nil
}

func leaderOf(kv *mvccpb.KeyValue) Leader {
	return Leader{
		Value: string(kv.Value),
		Token: fencing.Token(kv.CreateRevision),
		Key:   string(kv.Key),
		Lease: clientv3.LeaseID(kv.Lease),
	}
}

func (e *Election) register(l *Leadership) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	if l.HeldKey.Context().Err() == nil {
		e.live[l] = struct{}{}
	}
	return true
}

func (e *Election) unregister(l *Leadership) {
	e.mu.Lock()
	delete(e.live, l)
	e.mu.Unlock()
}
