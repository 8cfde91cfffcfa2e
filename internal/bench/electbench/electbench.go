package electbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/internal/bench"
)

// Errors of Run.
var (
	// ErrOptions: Run cannot use the options.
	ErrOptions = errors.New("electbench: invalid options")
	// ErrNoWinner: after a leader ended, no candidate won within the TTL
	// and 30s more.
	ErrNoWinner = errors.New("electbench: no candidate won")
)

// Options bound a run.
type Options struct {
	Rounds      int // handovers measured per implementation (and Rounds/2+1 after a 200ms wait)
	CrashRounds int // crash failovers per implementation; each takes about the TTL, 2s
	// Progress receives one line per step ("bench elect: ..."); nil discards.
	Progress io.Writer
}

// Validate reports the first option Run cannot use, wrapping ErrOptions.
func (o Options) Validate() error {
	if o.Rounds < 1 {
		return fmt.Errorf("%w: rounds %d: must be at least 1", ErrOptions, o.Rounds)
	}
	if o.CrashRounds < 1 {
		return fmt.Errorf("%w: crash rounds %d: must be at least 1", ErrOptions, o.CrashRounds)
	}
	return nil
}

// Row is one metric measured for both implementations.
type Row struct {
	Metric          string  `json:"metric"`
	Coordkit        float64 `json:"coordkit"`
	EtcdConcurrency float64 `json:"etcd_concurrency"`
	Unit            string  `json:"unit"`
}

// Result is the outcome of a run; its JSON form is coordctl bench elect's
// -w json contract.
type Result struct {
	Benchmark string `json:"benchmark"` // "elect"
	Rows      []Row  `json:"rows"`
}

// Table is the result in the form every bench command prints.
func (r Result) Table() bench.Table {
	t := bench.Table{
		Columns: []string{"coordkit", "etcd_concurrency"},
		Ratios:  []bench.Ratio{{Of: "coordkit", To: "etcd_concurrency"}},
	}
	for _, row := range r.Rows {
		t.Add(row.Metric, row.Unit, row.Coordkit, row.EtcdConcurrency)
	}
	return t
}

// Run starts an embedded etcd and measures both implementations on it. It
// returns ErrOptions for invalid options, ErrNoWinner, and ctx's error,
// wrapped, when ctx ends first.
func Run(ctx context.Context, o Options) (Result, error) {
	if err := o.Validate(); err != nil {
		return Result{}, err
	}
	progress := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "bench elect: "+format+"\n", args...)
		}
	}
	srv, stop, err := bench.StartEtcd(ctx, "elect", false, o.Progress)
	if err != nil {
		return Result{}, err
	}
	defer stop()
	b := &run{endpoints: srv.Endpoints()}
	defer b.closeAll()
	observer, err := b.client()
	if err != nil {
		return Result{}, err
	}
	b.observer = observer

	type measured struct {
		fresh, queued, crash []time.Duration
	}
	var res [2]measured
	impls := []struct {
		name string
		make func(ttl time.Duration) (candidate, error)
	}{
		{"coordkit", b.coordkitCandidate},
		{"etcd_concurrency", b.concurrencyCandidate},
	}
	for i, impl := range impls {
		progress("%s: %d handovers to a candidate that just queued", impl.name, o.Rounds)
		if res[i].fresh, err = b.rounds(ctx, impl.name+"-fresh", impl.make, 10*time.Second, o.Rounds, 10*time.Millisecond, candidate.Unlock); err != nil {
			return Result{}, fmt.Errorf("electbench: %s handover: %w", impl.name, err)
		}
		progress("%s: %d handovers to a candidate that waited 200ms", impl.name, o.Rounds/2+1)
		if res[i].queued, err = b.rounds(ctx, impl.name+"-queued", impl.make, 10*time.Second, o.Rounds/2+1, 200*time.Millisecond, candidate.Unlock); err != nil {
			return Result{}, fmt.Errorf("electbench: %s handover: %w", impl.name, err)
		}
	}
	for i, impl := range impls {
		progress("%s: %d crash failovers at TTL 2s", impl.name, o.CrashRounds)
		if res[i].crash, err = b.rounds(ctx, impl.name+"-crash", impl.make, 2*time.Second, o.CrashRounds, 200*time.Millisecond, candidate.crash); err != nil {
			return Result{}, fmt.Errorf("electbench: %s crash failover: %w", impl.name, err)
		}
	}
	row := func(metric string, pick func(measured) []time.Duration, p float64) Row {
		return Row{Metric: metric, Unit: "ms",
			Coordkit:        bench.Ms(bench.Percentile(pick(res[0]), p)),
			EtcdConcurrency: bench.Ms(bench.Percentile(pick(res[1]), p))}
	}
	return Result{Benchmark: "elect", Rows: []Row{
		row("handover_p50_ms", func(m measured) []time.Duration { return m.fresh }, 0.50),
		row("handover_p99_ms", func(m measured) []time.Duration { return m.fresh }, 0.99),
		row("handover_queued_200ms_p50_ms", func(m measured) []time.Duration { return m.queued }, 0.50),
		row("crash_failover_ttl2_ms", func(m measured) []time.Duration { return m.crash }, 0.50),
	}}, nil
}

// candidate is one candidate of an election as a bench.Locker: Lock
// campaigns until it leads, Unlock resigns at once; crash stops keeping
// the lease of the leadership it holds alive without revoking it. The
// run's cleanups close what candidates open, so Close does nothing.
type candidate interface {
	bench.Locker
	crash(ctx context.Context) error
}

// run holds the clients and sessions of one Run, closed at its end.
type run struct {
	endpoints []string
	observer  *clientv3.Client
	name      string
	clients   []*clientv3.Client
	cleanups  []func()
}

func (b *run) client() (*clientv3.Client, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: b.endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	b.clients = append(b.clients, c)
	return c, nil
}

func (b *run) closeAll() {
	for i := len(b.cleanups) - 1; i >= 0; i-- {
		b.cleanups[i]()
	}
	for _, c := range b.clients {
		_ = c.Close()
	}
}

// rounds measures n leadership changes between two candidates of a fresh
// election: the leader ends (resign or crash) once the other has queued
// and waited settle; the time is until the other's Campaign returns.
func (b *run) rounds(ctx context.Context, name string, mk func(time.Duration) (candidate, error), ttl time.Duration, n int, settle time.Duration, end func(candidate, context.Context) error) ([]time.Duration, error) {
	b.name = "bench/" + name
	var cands [2]candidate
	for i := range cands {
		c, err := mk(ttl)
		if err != nil {
			return nil, err
		}
		cands[i] = c
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lead := cands[0]
	if err := lead.Lock(cctx); err != nil {
		return nil, err
	}
	type won struct {
		l   candidate
		err error
		at  time.Time
	}
	var samples []time.Duration
	next := 1
	for i := 0; i < n; i++ {
		res := make(chan won, 1)
		go func(c candidate) {
			err := c.Lock(cctx)
			res <- won{c, err, time.Now()}
		}(cands[next])
		if err := b.waitCandidates(cctx, b.name+"/", 2); err != nil {
			cancel()
			<-res
			return nil, err
		}
		if !bench.Sleep(cctx, settle) {
			<-res
			return nil, ctx.Err()
		}
		start := time.Now()
		if err := end(lead, cctx); err != nil {
			cancel()
			<-res
			return nil, err
		}
		var w won
		select {
		case w = <-res:
		case <-time.After(ttl + 30*time.Second):
			cancel()
			<-res
			return nil, ErrNoWinner
		}
		if w.err != nil {
			return nil, w.err
		}
		samples = append(samples, w.at.Sub(start))
		lead, next = w.l, 1-next
	}
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer rcancel()
	return samples, lead.Unlock(rctx)
}

// waitCandidates polls until n candidates are queued under prefix: the
// campaigns being measured expose no event to wait on.
func (b *run) waitCandidates(ctx context.Context, prefix string, n int64) error {
	for {
		resp, err := b.observer.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return err
		}
		if resp.Count >= n {
			return nil
		}
		if !bench.Sleep(ctx, time.Millisecond) {
			return ctx.Err()
		}
	}
}

// coordkit: one client per candidate, a new session per campaign.
type coordkitCandidate struct {
	e *election.Election
	l *election.Leadership
}

func (b *run) coordkitCandidate(ttl time.Duration) (candidate, error) {
	c, err := b.client()
	if err != nil {
		return nil, err
	}
	e, err := election.New(c, b.name, election.WithTTL(ttl))
	if err != nil {
		return nil, err
	}
	b.cleanups = append(b.cleanups, func() { _ = e.Close() })
	return &coordkitCandidate{e: e}, nil
}

func (c *coordkitCandidate) Lock(ctx context.Context) (err error) {
	c.l, err = c.e.Campaign(ctx, "coordkit")
	return err
}

func (c *coordkitCandidate) Unlock(ctx context.Context) error { return c.l.Resign(ctx) }
func (c *coordkitCandidate) Close()                           {}

func (c *coordkitCandidate) crash(context.Context) error {
	c.l.Session().Orphan()
	return nil
}

// concurrency.Election: a client and session per candidate, kept across
// campaigns as etcdctl elect keeps them; a crash closes the client.
type concurrencyCandidate struct {
	b    *run
	ttl  time.Duration
	cli  *clientv3.Client
	sess *concurrency.Session
	e    *concurrency.Election // the one it leads
}

func (b *run) concurrencyCandidate(ttl time.Duration) (candidate, error) {
	return &concurrencyCandidate{b: b, ttl: ttl}, nil
}

func (c *concurrencyCandidate) Lock(ctx context.Context) error {
	if c.sess == nil {
		cli, err := c.b.client()
		if err != nil {
			return err
		}
		sess, err := concurrency.NewSession(cli, concurrency.WithTTL(int(c.ttl/time.Second)), concurrency.WithContext(context.WithoutCancel(ctx)))
		if err != nil {
			return err
		}
		c.cli, c.sess = cli, sess
		c.b.cleanups = append(c.b.cleanups, func() { _ = sess.Close() })
	}
	e := concurrency.NewElection(c.sess, c.b.name)
	if err := e.Campaign(ctx, "etcd"); err != nil {
		return err
	}
	c.e = e
	return nil
}

func (c *concurrencyCandidate) Unlock(ctx context.Context) error { return c.e.Resign(ctx) }
func (c *concurrencyCandidate) Close()                           {}

func (c *concurrencyCandidate) crash(context.Context) error {
	err := c.cli.Close() // keepalives stop; the lease is not revoked
	c.sess, c.cli = nil, nil
	return err
}
