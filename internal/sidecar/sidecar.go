package sidecar

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/internal/buildinfo"
	"github.com/coordkit/coordkit/internal/childproc"
	"github.com/coordkit/coordkit/internal/etcddial"
	"github.com/coordkit/coordkit/internal/httpguard"
	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/session"
)

// Environment variables set for the command (over inherited values):
// childproc.LeaderEnv's.
const (
	EnvElection     = childproc.EnvElection
	EnvLeaderID     = childproc.EnvLeaderID
	EnvFencingToken = childproc.EnvFencingToken
)

// DefaultTTL is the lease TTL of a sidecar's session when Config.TTL is zero.
const DefaultTTL = 5 * time.Second

// Config configures a Sidecar.
type Config struct {
	// Client is the etcd client; without one, Run connects through
	// Connect (one of the two is required).
	Client *clientv3.Client
	// Connect, when Client is nil, is how Run connects to etcd: it serves
	// meanwhile and retries. Its OnRetry, if any, reports each failed
	// attempt instead of the log; /healthz says it either way.
	Connect etcddial.Connect
	// Name is the election; ID is this instance's identity, the value it
	// campaigns with. Both required.
	Name string
	ID   string
	// Prefix namespaces the election's keys (election.WithPrefix).
	Prefix string
	// TTL is the lease TTL (at least 1s); DefaultTTL when zero. A crashed
	// leader is replaced about TTL after it stopped.
	TTL time.Duration
	// Coordination is the policy and this instance's attributes in the
	// election (coordinate.go); the zero value is first-come-first-served.
	Coordination
	// TokenFile, if set, holds the fencing token while this instance leads;
	// it is removed by New (a file left by an earlier run is stale), written
	// atomically on winning and removed on losing.
	TokenFile string
	// Command, if set, runs while this instance leads: Command[0] is the
	// program, the rest its arguments.
	Command []string
	// KillGrace is the time between SIGTERM and SIGKILL when the command
	// must stop; childproc.DefaultKillGrace when zero.
	KillGrace time.Duration
	// Watchdog is the coordctl binary the command runs below, in watchdog
	// mode (childproc.Config.Watchdog); empty for none.
	Watchdog string
	// Health, with a URL, ties leadership to the application's health
	// (HealthConfig); zero: leadership is the sidecar's alone.
	Health HealthConfig
	// Stdout and Stderr are the command's; discarded when nil.
	Stdout, Stderr io.Writer
	// Registerer receives the sidecar's metrics; nil registers them nowhere.
	Registerer prometheus.Registerer
	// Gatherer serves GET /metrics; nil disables the endpoint.
	Gatherer prometheus.Gatherer
	// Logger receives operational notes; nil discards them.
	Logger *slog.Logger
	// Clock stamps state changes and times campaigns; the system clock when nil.
	Clock session.Clock
	// Build is the build of coordctl that GET /v1/status and the
	// coordctl_build_info metric report; buildinfo.Read() when zero.
	Build buildinfo.Info
	// RequestTimeout bounds the API's reads of etcd (GET /v1/candidates);
	// 5s when zero.
	RequestTimeout time.Duration
	// APIToken, when it requires one, is required on the API's
	// state-changing requests (APIConfig.Token). A caller serving the API
	// on a non-loopback address must set it (httpguard.CheckListen).
	APIToken *httpguard.Secret
	// OnChange is called after each state change, in order, from the
	// goroutine that applied it; it must not block for long.
	OnChange func(State, Change)
	// Mount, when not nil, is served on the sidecar's listener beside its
	// own API, for the routes it names (coordctl sidecar --api: the
	// coordination API, internal/coordapi, which checks the token itself).
	// CloseAPI closes it.
	Mount Mounted
}

// Mounted is an API served beside the sidecar's own (Config.Mount).
type Mounted interface {
	http.Handler
	// Routes are the http.ServeMux patterns it serves.
	Routes() []string
	// Close ends its streams; the server can then shut down.
	Close() error
}

// ChildExitError is returned by Run when the command exited by itself; the
// sidecar resigned and passes the command's status on.
type ChildExitError struct {
	Code int
}

func (e *ChildExitError) Error() string {
	return fmt.Sprintf("sidecar: command exited with status %d", e.Code)
}

// Sidecar campaigns in one election for one instance, serves the HTTP API
// and runs the command while it leads.
type Sidecar struct {
	cfg     Config
	tracker *Tracker
	metrics *Metrics
	api     *API

	applyMu sync.Mutex // orders Apply and OnChange
	// tokenOwner holds the token file's lock (OwnTokenFile) until Run ends.
	tokenOwner *os.File
	health     *appHealth

	// conn connects through Config.Connect when there is no Config.Client
	// (nil otherwise); the client it makes is Run's to close.
	conn *etcddial.Connecting

	mu      sync.Mutex
	client  *clientv3.Client // Config.Client, or conn's once connected
	sess    *session.Session
	leading *election.Leadership
	resign  chan resignRequest
	// standAside: the last leadership ended by a resign-to; stay out of
	// the queue for a TTL before campaigning again.
	standAside bool
}

type resignRequest struct {
	l    *election.Leadership
	to   *string // ResignTo's target (election.Best for the best), nil for Resign
	why  string  // Resign's why, for the "lost" event's reason
	done chan error
}

// New validates cfg and returns a Sidecar; Run starts it. It removes a
// token file left by an earlier run, so that the file exists only while
// this instance leads. Errors wrap
// ErrBadConfig, ErrTokenFile (CheckTokenFile) or ErrCommand (CheckCommand),
// or come from registering the metrics.
func New(cfg Config) (s *Sidecar, err error) {
	switch {
	case cfg.Client == nil && cfg.Connect.Dial == nil:
		return nil, fmt.Errorf("%w: no etcd client and no way to connect", ErrBadConfig)
	case cfg.Connect.Timeout < 0:
		return nil, fmt.Errorf("%w: start timeout %s is negative", ErrBadConfig, cfg.Connect.Timeout)
	case cfg.Name == "":
		return nil, fmt.Errorf("%w: empty election name", ErrBadConfig)
	case cfg.ID == "":
		return nil, fmt.Errorf("%w: empty id", ErrBadConfig)
	case cfg.TTL != 0 && cfg.TTL < time.Second:
		return nil, fmt.Errorf("%w: TTL %s is below 1s", ErrBadConfig, cfg.TTL)
	case cfg.Command != nil && len(cfg.Command) == 0:
		return nil, fmt.Errorf("%w: empty command", ErrBadConfig)
	}
	var owned *os.File
	if cfg.TokenFile != "" {
		if err := CheckTokenFile(cfg.TokenFile); err != nil {
			return nil, err
		}
		var err error
		if owned, err = OwnTokenFile(cfg.TokenFile); err != nil {
			return nil, err
		}
		defer func() {
			if s == nil {
				owned.Close() // New failed: give the token file up
			}
		}()
		// A file left by an earlier run (a leader killed with -9; an
		// emptyDir outlives its container) must not say "I lead" for an
		// instance that starts as a standby.
		if err := RemoveTokenFile(cfg.TokenFile); err != nil {
			return nil, fmt.Errorf("%w %s: %w", ErrTokenFile, cfg.TokenFile, err)
		}
	}
	if cfg.Command != nil {
		if err := CheckCommand(cfg.Command); err != nil {
			return nil, err
		}
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Build == (buildinfo.Info{}) {
		cfg.Build = buildinfo.Read()
	}
	if cfg.Clock == nil {
		cfg.Clock = session.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Stdout == nil {
		cfg.Stdout = io.Discard
	}
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	// The scope is known before any leadership: where the election's keys
	// live (what Leadership.Scope returns).
	scope := primitive.Config{Kind: primitive.KindElection, Name: cfg.Name, Prefix: cfg.Prefix}.Scope()
	s = &Sidecar{
		cfg:        cfg,
		tracker:    NewTracker(cfg.Name, scope, cfg.ID, cfg.Clock),
		resign:     make(chan resignRequest),
		tokenOwner: owned,
		health:     newAppHealth(),
		client:     cfg.Client,
	}
	s.cfg.Health = cfg.Health.withDefaults()
	if cfg.Client == nil {
		c := cfg.Connect
		c.OnRetry = s.connectRetry
		s.conn = c.Start(cfg.Clock, etcddial.ConnectBackoff())
	}
	if cfg.Registerer != nil {
		m, err := NewMetrics(cfg.Registerer, cfg.Name, cfg.ID, s.leaseLeft, cfg.Build)
		if err != nil {
			return nil, fmt.Errorf("sidecar: metrics: %w", err)
		}
		s.metrics = m
	}
	// A resignation stops the command first, which may take the kill grace.
	grace := cfg.KillGrace
	if grace <= 0 {
		grace = childproc.DefaultKillGrace
	}
	if err := cfg.Coordination.check(); err != nil {
		return nil, err
	}
	s.cfg.Coordination = cfg.Coordination.withDefaults()
	var app func() AppStatus
	if url := s.cfg.Health.URL; url != "" {
		app = func() AppStatus { return s.health.status(url) }
	}
	// A resign-to may wait up to a TTL for a crashed candidate to expire.
	s.api = NewAPI(APIConfig{Tracker: s.tracker, Resign: func(ctx context.Context) error { return s.Resign(ctx, "requested by POST /v1/resign") }, ResignTo: s.ResignTo, Candidates: s.Candidates, Policy: s.Policy(),
		Gatherer: cfg.Gatherer, ResignTimeout: grace + cfg.TTL + 5*time.Second, ReadTimeout: cfg.RequestTimeout,
		Build: cfg.Build, Token: cfg.APIToken, Application: app})
	return s, nil
}

// Handler returns the HTTP API (see NewAPI), and Config.Mount's routes.
func (s *Sidecar) Handler() http.Handler {
	if s.cfg.Mount == nil {
		return s.api
	}
	mux := http.NewServeMux()
	mux.Handle("/", s.api)
	for _, pattern := range s.cfg.Mount.Routes() {
		mux.Handle(pattern, s.cfg.Mount)
	}
	return mux
}

// CloseAPI ends open watch streams (and Config.Mount's) so that the HTTP
// server can shut down.
func (s *Sidecar) CloseAPI() {
	s.api.Close()
	if s.cfg.Mount != nil {
		_ = s.cfg.Mount.Close()
	}
}

// State returns the current state.
func (s *Sidecar) State() State { return s.tracker.State() }

// Tracker returns the sidecar's state tracker (to subscribe to changes).
func (s *Sidecar) Tracker() *Tracker { return s.tracker }

// Resign makes this instance step down (stopping the command first) and
// campaign again at the back of the queue. why says who asked or what
// made it (the "lost" event's reason is "resigned: " and why; "resigned"
// when empty). It returns once the leadership is given up: ErrNotLeader if
// this instance does not lead, ctx's error if ctx ended first, or the
// error of deleting the leader key.
func (s *Sidecar) Resign(ctx context.Context, why string) error {
	s.mu.Lock()
	l := s.leading
	s.mu.Unlock()
	if l == nil {
		return ErrNotLeader
	}
	return s.ask(ctx, resignRequest{l: l, why: why, done: make(chan error, 1)})
}

// ask hands req to the hold loop and waits for its answer.
func (s *Sidecar) ask(ctx context.Context, req resignRequest) error {
	select {
	case s.resign <- req:
	case <-req.l.Context().Done(): // lost or resigned
		return ErrNotLeader
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Sidecar) apply(ev Event) {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	s.applyLocked(ev)
}

func (s *Sidecar) applyLocked(ev Event) {
	st, c := s.tracker.Apply(ev)
	s.metrics.Observe(st, c)
	if s.cfg.OnChange != nil {
		s.cfg.OnChange(st, c)
	}
}

func (s *Sidecar) leaseLeft() time.Duration {
	s.mu.Lock()
	sess := s.sess
	s.mu.Unlock()
	if sess == nil || !sess.Alive() {
		return 0
	}
	return sess.Deadline().Sub(s.cfg.Clock.Now())
}

// etcd returns the etcd client, nil before Run connected.
// Client returns the etcd client: Config.Client, or the one Run made once
// it connected (nil before that).
func (s *Sidecar) Client() *clientv3.Client { return s.etcd() }

func (s *Sidecar) etcd() *clientv3.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.client
}

// connectRetry reports a failed attempt to connect on /healthz, and to
// Connect.OnRetry or else in the log.
func (s *Sidecar) connectRetry(r etcddial.Retry) {
	s.apply(Event{Kind: SessionDown, Reason: "connecting to etcd: " + r.Err.Error()})
	if s.cfg.Connect.OnRetry != nil {
		s.cfg.Connect.OnRetry(r) // which reports it instead of the log
		return
	}
	s.cfg.Logger.Warn("connect", "attempt", r.Attempt, "err", r.Err, "wait", r.Wait)
}

// connectFirst is Serve's attempt to connect before it listens: nil when
// connected, or when etcd could not be reached (Run keeps trying) or ctx
// ended (Run returns at once); else the error that ends the sidecar.
func (s *Sidecar) connectFirst(ctx context.Context) error {
	if s.conn == nil || s.etcd() != nil {
		return nil
	}
	cli, err := s.conn.Attempt(ctx)
	switch {
	case cli != nil:
		s.setClient(cli)
	case ctx.Err() != nil:
		return nil
	}
	return err
}

func (s *Sidecar) setClient(cli *clientv3.Client) {
	s.mu.Lock()
	s.client = cli
	s.mu.Unlock()
}

func (s *Sidecar) setSession(sess *session.Session) {
	s.mu.Lock()
	s.sess = sess
	s.mu.Unlock()
}

// sessionEnded reports the end of sess unless a newer session replaced it:
// a late report must not mark the newer session's sidecar unhealthy.
func (s *Sidecar) sessionEnded(sess *session.Session) {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	s.mu.Lock()
	current := s.sess == sess
	s.mu.Unlock()
	if current {
		s.applyLocked(Event{Kind: SessionDown, Reason: "session ended: " + errString(sess.Err())})
	}
}

func (s *Sidecar) setLeading(l *election.Leadership) {
	s.mu.Lock()
	s.leading = l
	s.mu.Unlock()
}

func (s *Sidecar) onSessionEvent(ev session.Event) {
	if ev.KeepAliveLatency > 0 {
		s.metrics.ObserveKeepAlive(ev.KeepAliveLatency)
	}
}

// Run campaigns until ctx ends or the command exits by itself. On ctx's
// end it stops the command, resigns (a standby takes over at once), revokes
// its lease and returns nil. When the command exits by itself it resigns
// and returns a *ChildExitError with the command's status. It returns other
// errors when the token file cannot be written or the command cannot start
// (after resigning). Sessions lost on the way (etcd unreachable, lease
// expired) are replaced; /healthz reports them meanwhile. Without a
// Config.Client it first connects (Config.Connect), retrying until etcd is
// reached; it returns the error of an attempt that Connect.Transient
// rejects, or one wrapping etcddial.ErrStartTimeout.
func (s *Sidecar) Run(ctx context.Context) error {
	if s.tokenOwner != nil {
		defer s.tokenOwner.Close()
	}
	cli := s.etcd()
	if cli == nil {
		var err error
		if cli, err = s.conn.Run(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		s.setClient(cli)
	}
	if s.conn != nil {
		defer func() {
			// The API mounted beside the sidecar's (sidecar --api) runs on
			// this client: close it first, so that its holds are released
			// (their keys deleted, the next holder granted at once), not
			// cut by the client's close and left to their lease's TTL.
			if s.cfg.Mount != nil {
				_ = s.cfg.Mount.Close()
			}
			cli.Close()
		}()
	}
	octx, stopObserve := context.WithCancel(ctx)
	var aside sync.WaitGroup // the observer and the health checks
	aside.Add(1)
	go func() { defer aside.Done(); s.observe(octx) }()
	if s.cfg.Health.URL != "" {
		aside.Add(1)
		go func() { defer aside.Done(); s.checkHealth(octx) }()
	}
	defer func() {
		stopObserve()
		aside.Wait()
	}()

	newSession := func() (*session.Session, error) {
		return session.New(ctx, cli, session.WithTTL(s.cfg.TTL), session.WithObserver(s.onSessionEvent))
	}
	sessionDown := backoff.WithNotify(func(err error, _ time.Duration) {
		s.apply(Event{Kind: SessionDown, Reason: "cannot create a session: " + err.Error()})
		s.cfg.Logger.Warn("session", "err", err)
	})
	for {
		if ctx.Err() != nil {
			return nil
		}
		sess, err := backoff.Retry(ctx, newSession, backoff.WithBackOff(retryBackoff()), backoff.WithMaxElapsedTime(0), sessionDown)
		if err != nil {
			return nil // only the end of ctx ends the retries
		}
		s.setSession(sess)
		s.apply(Event{Kind: SessionUp, Alive: sess.Alive})
		// Report the loss as soon as it happens, even while waiting in the queue.
		stop := context.AfterFunc(sess.Context(), func() {
			if ctx.Err() == nil {
				s.sessionEnded(sess)
			}
		})
		err = s.runSession(ctx, sess)
		stop()
		if ctx.Err() == nil && sess.Err() != nil {
			s.sessionEnded(sess)
		}
		s.setSession(nil)
		if sess.Err() == nil || ctx.Err() != nil || err != nil {
			if cerr := sess.Close(); cerr != nil {
				s.cfg.Logger.Warn("revoke lease", "err", cerr)
			}
		} else {
			sess.Orphan()
		}
		if ctx.Err() != nil || err != nil {
			return err
		}
	}
}

// runSession campaigns on sess until the session ends (nil), ctx ends
// (nil), or the command exited or failed (its error).
func (s *Sidecar) runSession(ctx context.Context, sess *session.Session) error {
	e, err := election.New(s.etcd(), s.cfg.Name, append(s.cfg.Coordination.options(s.cfg.ID),
		election.WithSession(sess), election.WithPrefix(s.cfg.Prefix))...)
	if err != nil {
		return err
	}
	var start time.Time
	campaign := func() (*election.Leadership, error) {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(sess.Context(), cancel)
		defer stop()
		start = s.cfg.Clock.Now()
		l, err := e.Campaign(cctx, s.cfg.ID)
		if err != nil && ctx.Err() == nil && !sess.Alive() {
			return nil, backoff.Permanent(err)
		}
		return l, err
	}
	campaignFailed := backoff.WithNotify(func(err error, _ time.Duration) { s.cfg.Logger.Warn("campaign", "err", err) })
	for {
		if !s.waitStandAside(ctx, sess) || !s.waitHealthy(ctx, sess.Done()) {
			return nil
		}
		l, err := backoff.Retry(ctx, campaign, backoff.WithBackOff(retryBackoff()), backoff.WithMaxElapsedTime(0), campaignFailed)
		switch {
		case ctx.Err() != nil:
			if l != nil {
				_ = s.release(l)
			}
			return nil
		case err != nil: // the session ended
			return nil
		}
		s.metrics.ObserveCampaign(s.cfg.Clock.Now().Sub(start))
		if err := s.lead(ctx, l); err != nil {
			return err
		}
		if ctx.Err() != nil || !sess.Alive() {
			return nil
		}
	}
}

// lead holds one leadership until it ends. It returns nil to campaign
// again (lost or resigned, or ctx ended) and an error to stop the sidecar.
func (s *Sidecar) lead(ctx context.Context, l *election.Leadership) error {
	s.setLeading(l)
	defer s.setLeading(nil)
	// The token file is in place before the instance reports ready, and
	// valid until the lease's local deadline (its modification time),
	// which moves on with every acknowledged keepalive.
	if s.cfg.TokenFile != "" {
		if err := WriteTokenFile(s.cfg.TokenFile, l.Token(), l.Session().Deadline()); err != nil {
			_ = s.release(l)
			return err
		}
		defer s.keepStamping(l)()
	}
	s.apply(Event{Kind: Elected, Token: l.Token(), Alive: l.Alive})
	s.cfg.Logger.Info("elected", "token", l.Token())
	return s.hold(ctx, l)
}

// stampEvery is how often a leader looks whether its lease's local
// deadline moved (a keepalive was acknowledged) and stamps the token file.
const stampEvery = 100 * time.Millisecond

// keepStamping moves the token file's modification time to the lease's
// local deadline whenever it moves, until the leadership ends or the
// returned stop is called (it waits for the loop). A stamp that fails is
// noted once; the file then stops counting at the last deadline stamped,
// which is early, never late.
func (s *Sidecar) keepStamping(l *election.Leadership) (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(stampEvery)
		defer t.Stop()
		stamped, noted := l.Session().Deadline(), false
		for {
			select {
			case <-done:
				return
			case <-l.Lost():
				return
			case <-t.C:
			}
			d := l.Session().Deadline()
			if !d.After(stamped) {
				continue
			}
			if err := StampTokenFile(s.cfg.TokenFile, d); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return // removed: the leadership is ending
				}
				if !noted {
					s.cfg.Logger.Warn("token file not stamped", "err", err)
					noted = true
				}
				continue
			}
			stamped = d
		}
	}()
	return func() { close(done); <-stopped }
}

// hold runs the command (if any) while l lasts, through the one
// hold-and-run path (childproc.Supervise): it returns nil to campaign again
// (lost, resigned or handed over, or ctx ended) and an error to stop the
// sidecar (the command exited, or could not start). Whatever ends the
// leadership, the instance turns unready and the token file goes first,
// then the command stops, and last the leader key is deleted, so that the
// next leader starts only after the command is gone.
func (s *Sidecar) hold(ctx context.Context, l *election.Leadership) error {
	done := make(chan struct{})
	h := &leaderHold{Leadership: l, s: s, stop: make(chan struct{}), done: done,
		reached: make(chan struct{}), result: make(chan error, 1)}
	served := make(chan *resignRequest, 1)
	go func() { served <- s.serveResign(ctx, h) }()

	var cmd childproc.Config
	if len(s.cfg.Command) > 0 {
		cmd = childproc.Config{
			Path:      s.cfg.Command[0],
			Args:      s.cfg.Command[1:],
			Env:       childproc.LeaderEnv(s.cfg.Name, s.cfg.ID, l.Token(), l.Scope()),
			Stdout:    s.cfg.Stdout,
			Stderr:    s.cfg.Stderr,
			KillGrace: s.cfg.KillGrace,
			Watchdog:  s.cfg.Watchdog,
		}
	}
	o := childproc.Supervise(childproc.Supervision{
		Hold:    h,
		What:    "leadership of " + s.cfg.Name,
		Command: cmd,
		Stop:    h.stop,
		Notef:   func(format string, args ...any) { s.cfg.Logger.Warn(fmt.Sprintf(format, args...)) },
		OnEnd: func(o childproc.Outcome) {
			switch o.End {
			case childproc.Lost:
				s.cfg.Logger.Warn("lost", "token", l.Token(), "err", o.Lost)
				s.deposed("leadership lost: " + errString(o.Lost))
			case childproc.Exited:
				s.deposed(fmt.Sprintf("command exited with status %d", o.Code))
			case childproc.StartFailed:
				s.deposed("cannot start the command")
			case childproc.Stopped:
				switch reason := h.handoverReason(); {
				case reason != "":
					s.deposed(reason)
				case ctx.Err() != nil:
					s.deposed("shutting down")
				case h.resignWhy != "":
					s.deposed("resigned: " + h.resignWhy)
				default:
					s.deposed("resigned")
				}
			}
		},
	})
	close(done)
	if req := <-served; req != nil {
		req.done <- o.ReleaseErr
	}
	switch o.End {
	case childproc.StartFailed:
		return o.StartErr
	case childproc.Exited:
		return &ChildExitError{Code: o.Code}
	}
	return nil
}

// serveResign answers resignations and handovers while h leads. A plain
// resignation for it closes h.stop and is returned (its answer is the
// release's error); a resign-to, or a yield to a preferred candidate, is a
// handover (handOver), answered here, and a handover that could not be
// made leaves the leadership and the command as they were. One for an
// earlier leadership gets ErrNotLeader. The end of ctx closes h.stop too.
func (s *Sidecar) serveResign(ctx context.Context, h *leaderHold) *resignRequest {
	yield := h.Yield()
	for {
		select {
		case req := <-s.resign:
			if req.l != h.Leadership {
				req.done <- ErrNotLeader // asked of an earlier leadership
				continue
			}
			if req.to == nil {
				h.stopOnce.Do(func() { h.resignWhy = req.why; close(h.stop) })
				return &req
			}
			ended, err := s.handOver(h, *req.to, true)
			req.done <- err
			if ended {
				return nil
			}
		case <-yield:
			if ended, err := s.handOver(h, election.Best, false); ended {
				return nil
			} else if err != nil {
				s.cfg.Logger.Warn("hand over to a preferred candidate", "err", err)
			}
			yield = nil // the handover could not be made: keep leading
		case <-ctx.Done():
			h.stopOnce.Do(func() { close(h.stop) })
			return nil
		case <-h.done:
			return nil
		}
	}
}

// leaderHold is a leadership as childproc.Supervise sees it. Its release
// resigns, unless the leadership was lost (nothing is left to give up, and
// etcd may be gone) — or, during a handover, lets the handover's last step
// (ResignToWith resigning) go on once the command is stopped, and returns
// its result.
type leaderHold struct {
	*election.Leadership
	s        *Sidecar
	stop     chan struct{} // closed: Supervise stops the command and releases
	stopOnce sync.Once
	// resignWhy is a Resign's why, set before stop is closed (read after).
	resignWhy string
	done      <-chan struct{} // closed when Supervise has returned

	mu      sync.Mutex
	handing string        // the handover's reason, once its stop step began
	reached chan struct{} // closed by Release during a handover
	result  chan error    // the handover's result, for Release
}

func (h *leaderHold) Release() error {
	if h.handoverReason() != "" {
		close(h.reached)
		return <-h.result
	}
	if h.Err() != nil {
		return nil
	}
	return h.s.release(h.Leadership)
}

func (h *leaderHold) handoverReason() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.handing
}

// stopForHandover is a handover's stop step (ResignToWith's hook): the
// command stops through Supervise, which then calls Release; the hook
// returns once it has, so that the leader key goes only after the command.
func (h *leaderHold) stopForHandover(reason string) {
	h.mu.Lock()
	h.handing = reason
	h.mu.Unlock()
	h.stopOnce.Do(func() { close(h.stop) })
	select {
	case <-h.reached:
	case <-h.done: // Supervise ended first (lost, the command exited)
	}
}

func (s *Sidecar) release(l *election.Leadership) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := l.Resign(ctx)
	if errors.Is(err, election.ErrNotLeader) {
		return nil // lost meanwhile: nothing to give up
	}
	return err
}

// deposed records the end of the leadership and removes the token file.
func (s *Sidecar) deposed(reason string) {
	s.apply(Event{Kind: Deposed, Reason: reason})
	if s.cfg.TokenFile != "" {
		if err := RemoveTokenFile(s.cfg.TokenFile); err != nil {
			s.cfg.Logger.Warn("token file", "err", err)
		}
	}
}

// observe feeds LeaderObserved events until ctx ends (election.Watch,
// which observes again after errors), and LeaderUnknown once etcd has not
// answered for longer than the last leader's lease TTL: a standby cut off
// from etcd stops naming a leader that may be gone.
func (s *Sidecar) observe(ctx context.Context) {
	e, err := election.New(s.etcd(), s.cfg.Name, election.WithPrefix(s.cfg.Prefix), election.WithTTL(s.cfg.TTL))
	if err != nil {
		return
	}
	defer e.Close()
	err = e.Watch(ctx, election.WatchConfig{Clock: s.cfg.Clock, OnEvent: func(ev election.WatchEvent) error {
		switch ev.Kind {
		case election.WatchLeader:
			if ev.Leader == nil {
				s.apply(Event{Kind: LeaderObserved})
			} else {
				s.apply(Event{Kind: LeaderObserved, Leader: ev.Leader.Value, Token: ev.Leader.Token})
			}
		case election.WatchUnknown:
			s.cfg.Logger.Warn("observe", "leader", "unknown", "reason", ev.Reason)
			s.apply(Event{Kind: LeaderUnknown, Reason: ev.Reason})
		case election.WatchRetry, election.WatchDown:
			s.cfg.Logger.Warn("observe", "err", ev.Err)
		}
		return nil
	}})
	if err != nil && ctx.Err() == nil {
		s.cfg.Logger.Error("observe: stopped", "err", err) // the name is another primitive's
	}
}

// retryBackoff paces retries after etcd errors: full jitter, capped at
// 100ms doubling to 2s.
func retryBackoff() *backoff.ExponentialBackOff {
	return session.Backoff{Initial: 100 * time.Millisecond, Max: 2 * time.Second}.Exponential()
}

func errString(err error) string {
	if err == nil {
		return "unknown"
	}
	return err.Error()
}
