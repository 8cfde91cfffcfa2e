package claim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/session"
)

// Errors returned by Claim, Release and Get. Those a claim shares with
// locks, semaphores and elections are session's, under the old names.
var (
	// ErrEmptyOwner is returned for an empty owner.
	ErrEmptyOwner = errors.New("claim: empty owner")
	// ErrNotClaimed is returned by Release and Get for a name nobody holds.
	ErrNotClaimed = errors.New("claim: not claimed")
	// ErrUnknownOp is returned by Do for an Op it does not know.
	ErrUnknownOp = errors.New("claim: unknown op")

	// ErrNotOwner is matched by every *NotOwnerError: the name is held by
	// another owner.
	ErrNotOwner = errors.New("claim: not the owner")
)

// DefaultPrefix is the key prefix of claims: name N lives at coordkit/claims/N.
const DefaultPrefix = "coordkit/claims"

// MinTTL is the shortest TTL Claim accepts; etcd may still raise it to its
// own minimum lease TTL.
const MinTTL = time.Second

// Client is what this package needs of etcd; *clientv3.Client has it.
type Client interface {
	Txn(ctx context.Context) clientv3.Txn
	Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error)
	Grant(ctx context.Context, ttl int64) (*clientv3.LeaseGrantResponse, error)
	Revoke(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseRevokeResponse, error)
	TimeToLive(ctx context.Context, id clientv3.LeaseID, opts ...clientv3.LeaseOption) (*clientv3.LeaseTimeToLiveResponse, error)
}

var _ Client = (*clientv3.Client)(nil)

// Option configures Claim, Release and Get.
type Option func(*options)

type options struct {
	prefix string
	ttl    time.Duration
}

// WithPrefix puts claims under prefix instead of DefaultPrefix. A trailing
// slash is optional; an empty prefix puts the claim at the name itself.
func WithPrefix(prefix string) Option { return func(o *options) { o.prefix = prefix } }

// WithTTL puts the claim on a lease of ttl (rounded up to whole seconds) that
// is not kept alive: the claim expires unless the caller renews Result.Lease.
// Only Claim uses it; zero means no lease (the claim lasts until released).
func WithTTL(ttl time.Duration) Option { return func(o *options) { o.ttl = ttl } }

func buildOptions(opts []Option) options {
	o := options{prefix: DefaultPrefix}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// Key returns the etcd key of name under prefix.
func Key(prefix, name string) string {
	prefix = strings.TrimSuffix(prefix, "/")
	if prefix == "" {
		return name
	}
	return prefix + "/" + name
}

// Result describes a claim as one request saw it.
type Result struct {
	Name     string
	Key      string
	Owner    string           // the owner of the name now
	Revision fencing.Token    // create revision of the claim key: unique per claim, usable as a fencing token
	Won      bool             // this call created the claim
	Yours    bool             // Owner is the owner asked about (always true if Won)
	Lease    clientv3.LeaseID // the lease the claim lives on; 0 if none
	TTL      time.Duration    // granted TTL of Lease (Claim when Won, and Get)
	Left     time.Duration    // Get only: time the lease has left
}

// NotOwnerError is returned by Release when someone else holds the name.
type NotOwnerError struct {
	Name     string
	Owner    string        // the current owner
	Revision fencing.Token // the current claim's create revision
}

func (e *NotOwnerError) Error() string {
	return fmt.Sprintf("claim: not the owner: %q is held by %q (revision %d)", e.Name, e.Owner, e.Revision)
}

// Unwrap makes errors.Is(err, ErrNotOwner) true.
func (e *NotOwnerError) Unwrap() error { return ErrNotOwner }

func validate(name, owner string, o options, needOwner bool) error {
	if err := primitive.ValidateName(name); err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	if needOwner && owner == "" {
		return ErrEmptyOwner
	}
	if o.ttl != 0 && o.ttl < MinTTL {
		return fmt.Errorf("%w: a claim's TTL must be 0 (no lease) or at least %s, got %s", session.ErrBadTTL, MinTTL, o.ttl)
	}
	return nil
}

// Claim tries to make owner the owner of name, in one transaction. It
// returns the claim as it stands after the transaction: Won if this call
// created it, otherwise the current owner (Yours if that is owner already).
// Losing is not an error. Errors: session.ErrInvalidName, ErrEmptyOwner,
// session.ErrBadTTL, or etcd's error wrapped.
func Claim(ctx context.Context, c Client, name, owner string, opts ...Option) (Result, error) {
	o := buildOptions(opts)
	if err := validate(name, owner, o, true); err != nil {
		return Result{}, err
	}
	key := Key(o.prefix, name)
	res := Result{Name: name, Key: key}

	var lease clientv3.LeaseID
	put := []clientv3.OpOption{}
	if o.ttl != 0 {
		secs := int64((o.ttl + time.Second - 1) / time.Second)
		g, err := c.Grant(ctx, secs)
		if err != nil {
			return Result{}, fmt.Errorf("claim %q: grant lease: %w", name, err)
		}
		lease = g.ID
		res.TTL = time.Duration(g.TTL) * time.Second
		put = append(put, clientv3.WithLease(lease))
	}

	resp, err := c.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, owner, put...)).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		revoke(ctx, c, lease)
		return Result{}, fmt.Errorf("claim %q: %w", name, err)
	}
	if resp.Succeeded {
		res.Owner, res.Won, res.Yours, res.Lease = owner, true, true, lease
		// The transaction wrote once, so the key's create revision is the
		// header's revision.
		res.Revision = fencing.Token(resp.Header.Revision)
		return res, nil
	}
	revoke(ctx, c, lease)
	res.TTL = 0
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return Result{}, fmt.Errorf("claim %q: key %s exists but the transaction read nothing", name, key)
	}
	kv := kvs[0]
	res.Owner = string(kv.Value)
	res.Revision = fencing.Token(kv.CreateRevision)
	res.Lease = clientv3.LeaseID(kv.Lease)
	res.Yours = res.Owner == owner
	return res, nil
}

func revoke(ctx context.Context, c Client, id clientv3.LeaseID) {
	if id != 0 {
		_, _ = c.Revoke(ctx, id) // best effort: an unused lease expires anyway
	}
}

// Release deletes the claim on name if owner holds it, in one transaction
// comparing the value. It returns the released claim. Errors: session.ErrInvalidName,
// ErrEmptyOwner, ErrNotClaimed if there is no claim, *NotOwnerError
// (errors.Is ErrNotOwner) if someone else holds it.
func Release(ctx context.Context, c Client, name, owner string, opts ...Option) (Result, error) {
	o := buildOptions(opts)
	o.ttl = 0
	if err := validate(name, owner, o, true); err != nil {
		return Result{}, err
	}
	key := Key(o.prefix, name)
	resp, err := c.Txn(ctx).
		If(clientv3.Compare(clientv3.Value(key), "=", owner)).
		Then(clientv3.OpDelete(key, clientv3.WithPrevKV())).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return Result{}, fmt.Errorf("release %q: %w", name, err)
	}
	res := Result{Name: name, Key: key, Owner: owner, Yours: true}
	if resp.Succeeded {
		if prev := resp.Responses[0].GetResponseDeleteRange().PrevKvs; len(prev) > 0 {
			res.Revision = fencing.Token(prev[0].CreateRevision)
			res.Lease = clientv3.LeaseID(prev[0].Lease)
		}
		return res, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return Result{}, fmt.Errorf("%w: nobody holds %q", ErrNotClaimed, name)
	}
	return Result{}, &NotOwnerError{Name: name, Owner: string(kvs[0].Value), Revision: fencing.Token(kvs[0].CreateRevision)}
}

// Get returns the current claim on name, with the lease's TTL and time left
// if it has one. Yours is false: Get asks on nobody's behalf. Errors:
// session.ErrInvalidName, ErrNotClaimed.
func Get(ctx context.Context, c Client, name string, opts ...Option) (Result, error) {
	o := buildOptions(opts)
	o.ttl = 0
	if err := validate(name, "", o, false); err != nil {
		return Result{}, err
	}
	key := Key(o.prefix, name)
	resp, err := c.Get(ctx, key)
	if err != nil {
		return Result{}, fmt.Errorf("get claim %q: %w", name, err)
	}
	if len(resp.Kvs) == 0 {
		return Result{}, fmt.Errorf("%w: nobody holds %q", ErrNotClaimed, name)
	}
	kv := resp.Kvs[0]
	res := Result{Name: name, Key: key, Owner: string(kv.Value), Revision: fencing.Token(kv.CreateRevision), Lease: clientv3.LeaseID(kv.Lease)}
	if res.Lease != 0 {
		ttl, err := c.TimeToLive(ctx, res.Lease)
		if err != nil {
			return Result{}, fmt.Errorf("get claim %q: lease: %w", name, err)
		}
		res.TTL = time.Duration(ttl.GrantedTTL) * time.Second
		if ttl.TTL > 0 {
			res.Left = time.Duration(ttl.TTL) * time.Second
		}
	}
	return res, nil
}
