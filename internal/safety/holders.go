package safety

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/lock"
)

// Target is what the clients contend for.
type Target string

// Targets.
const (
	TargetLock     Target = "lock"
	TargetElection Target = "election"
)

// tenure is one holding of the lock or one leadership.
type tenure interface {
	Token() uint64
	Alive() bool
	Release(ctx context.Context) error
}

// acquirer grants tenures; one per client.
type acquirer interface {
	Acquire(ctx context.Context) (tenure, error)
	Close() error
}

func newAcquirer(target Target, cli *clientv3.Client, name string, ttl time.Duration, client int) (acquirer, error) {
	switch target {
	case TargetLock:
		m, err := lock.New(cli, name, lock.WithTTL(ttl))
		if err != nil {
			return nil, err
		}
		return lockAcquirer{m}, nil
	case TargetElection:
		e, err := election.New(cli, name, election.WithTTL(ttl))
		if err != nil {
			return nil, err
		}
		return electionAcquirer{e: e, value: fmt.Sprintf("client-%d", client)}, nil
	}
	return nil, fmt.Errorf("safety: unknown target %q", target)
}

type lockAcquirer struct{ m *lock.Mutex }

func (a lockAcquirer) Acquire(ctx context.Context) (tenure, error) {
	h, err := a.m.Lock(ctx)
	if err != nil {
		return nil, err
	}
	return heldTenure{h}, nil
}

func (a lockAcquirer) Close() error { return a.m.Close() }

type heldTenure struct{ h *lock.Held }

func (t heldTenure) Token() uint64                     { return uint64(t.h.Token()) }
func (t heldTenure) Alive() bool                       { return t.h.Alive() }
func (t heldTenure) Release(ctx context.Context) error { return t.h.Unlock(ctx) }

type electionAcquirer struct {
	e     *election.Election
	value string
}

func (a electionAcquirer) Acquire(ctx context.Context) (tenure, error) {
	l, err := a.e.Campaign(ctx, a.value)
	if err != nil {
		return nil, err
	}
	return leaderTenure{l}, nil
}

func (a electionAcquirer) Close() error { return a.e.Close() }

type leaderTenure struct{ l *election.Leadership }

func (t leaderTenure) Token() uint64                     { return uint64(t.l.Token()) }
func (t leaderTenure) Alive() bool                       { return t.l.Alive() }
func (t leaderTenure) Release(ctx context.Context) error { return t.l.Resign(ctx) }
