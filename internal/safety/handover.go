package safety

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/election"
)

// A coordinated election-safety run (Config.Policy): every client publishes
// attributes that differ (priority client%3, version 1.(client%3).0), so
// leaders are preempted when a preferred client joins, and each leadership
// ends, at random from the run's seed, by Resign, ResignTo(Best) or
// ResignTo another client by id. The checks stay the same: one holder's
// writes at a time as the resource admits them, tokens never down.

func newElectionLock(cfg Config, cli *clientv3.Client, client int, counts *handoverCounter) (Lock, error) {
	opts := []election.Option{election.WithTTL(cfg.TTL)}
	var hc *handoverChooser
	if cfg.Policy != "" {
		opts = append(opts, election.WithPolicy(cfg.Policy), election.WithAttributes(election.Attributes{
			Priority: int64(client % 3),
			Version:  fmt.Sprintf("1.%d.0", client%3),
		}))
		hc = &handoverChooser{clients: cfg.Clients, self: client, counts: counts,
			rng: rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(client)+1000))}
	}
	e, err := election.New(cli, Scope, opts...)
	if err != nil {
		return nil, err
	}
	return electionLock{e: e, value: clientValue(client), handover: hc}, nil
}

func clientValue(client int) string { return fmt.Sprintf("client-%d", client) }

// yielding: the policy asked the leader to hand over; it stops writing.
func yielding(l *election.Leadership) bool {
	select {
	case <-l.Yield():
		return true
	default:
		return false
	}
}

// handoverChooser picks how a leadership ends. nil: always Resign.
type handoverChooser struct {
	clients, self int
	counts        *handoverCounter
	mu            sync.Mutex
	rng           *rand.Rand
}

// release ends l: a leader asked to yield hands over to the best; others
// resign, or hand over to the best or to a random other client. A handover
// that cannot be made (no such candidate queued, a foreign one before it)
// falls back to Resign.
func (h *handoverChooser) release(ctx context.Context, l *election.Leadership) error {
	if h == nil {
		return l.Resign(ctx)
	}
	to, plain := election.Best, false
	if yielding(l) {
		h.counts.yields.Add(1)
	} else {
		h.mu.Lock()
		switch h.rng.IntN(3) {
		case 0:
			plain = true
		case 1:
			k := 1 + h.rng.IntN(h.clients)
			if k == h.self {
				k = k%h.clients + 1
			}
			to = clientValue(k)
		}
		h.mu.Unlock()
	}
	if !plain {
		h.counts.resignTo.Add(1)
		err := l.ResignTo(ctx, to)
		if err == nil {
			h.counts.handedOver.Add(1)
		}
		if err == nil || l.Context().Err() != nil {
			return err
		}
	}
	h.counts.resigns.Add(1)
	return l.Resign(ctx)
}

// HandoverCounts say how the in-process leaderships of a coordinated run
// ended.
type HandoverCounts struct {
	// Yields: leaders the policy asked to hand over (a preferred one joined).
	Yields int64 `json:"yields"`
	// ResignTo: ResignTo calls (yields included); HandedOver: those that
	// handed over.
	ResignTo   int64 `json:"resign_to"`
	HandedOver int64 `json:"handed_over"`
	// Resigns: plain resignations (chosen, or after a ResignTo that could
	// not be made).
	Resigns int64 `json:"resigns"`
}

type handoverCounter struct {
	yields, resignTo, handedOver, resigns atomic.Int64
}

func (c *handoverCounter) snapshot() HandoverCounts {
	return HandoverCounts{Yields: c.yields.Load(), ResignTo: c.resignTo.Load(), HandedOver: c.handedOver.Load(), Resigns: c.resigns.Load()}
}

func validPolicy(p election.Policy) bool {
	_, err := election.ParsePolicy(string(p))
	return err == nil
}
