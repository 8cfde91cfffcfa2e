package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/internal/etcdembed"
)

type benchElectOptions struct {
	Rounds      int
	CrashRounds int
}

// electBenchRow is one metric measured for both implementations.
type electBenchRow struct {
	Metric          string  `json:"metric"`
	Coordkit        float64 `json:"coordkit"`
	EtcdConcurrency float64 `json:"etcd_concurrency"`
	Unit            string  `json:"unit"`
}

// benchElectReport is what coordctl bench elect prints; its JSON form is
// the contract.
type benchElectReport struct {
	Benchmark string          `json:"benchmark"`
	Rows      []electBenchRow `json:"rows"`
}

func (r benchElectReport) WriteSimple(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "metric\tcoordkit\tetcd_concurrency\tunit\tetcd/coordkit")
	for _, row := range r.Rows {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%s\t%s\n", row.Metric, row.Coordkit, row.EtcdConcurrency, row.Unit, electRatio(row.EtcdConcurrency, row.Coordkit))
	}
	return tw.Flush()
}

// electRatio formats a/b as "12.3x", or "-" when b is zero.
func electRatio(a, b float64) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fx", a/b)
}

// electPercentileMS is the nearest-rank percentile p (0..100) of samples, in ms.
func electPercentileMS(samples []time.Duration, p float64) float64 {
	if len(samples) == 0 {
		return 0
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	rank = min(max(rank, 1), len(s))
	return float64(s[rank-1].Microseconds()) / 1000
}

func newBenchElectCmd(f *factory) *cobra.Command {
	opts := &benchElectOptions{}
	cmd := &cobra.Command{
		Use:   "elect [--rounds N] [--crash-rounds N]",
		Short: "Handover and crash failover of coordkit's election against etcd's concurrency.Election",
		Long: `Start an embedded etcd and measure, in the same run, coordkit's election and
etcd's concurrency.Election (what 'etcdctl elect' uses) on it:

  handover_p50_ms, handover_p99_ms   the leader resigns → the next candidate's
      Campaign returns. The next candidate queued just before (the back of a
      busy line, or a leader rotating out): concurrency.Election watches its
      predecessor from the revision of the read that saw it, which etcd serves
      from its unsynced watcher group, polled every 100ms; coordkit watches from
      the revision after, in the synced group, and hears the delete at once.
  handover_queued_200ms_p50_ms      the same with a candidate that had waited
      200ms: by then etcd has synced the watcher, and both are fast.
  crash_failover_ttl2_ms            TTL 2s; the leader stops its keepalives
      without revoking (coordkit: Orphan; etcd: its client closed) → the next
      candidate wins. Mostly the TTL: both wait for the lease to expire.

Progress goes to stderr; the table (-w json: {"benchmark":"elect","rows":[...]})
to stdout. The ratio column is etcd_concurrency / coordkit. The default run
takes under a minute.`,
		Example: `  coordctl bench elect
  coordctl bench elect -w json
  coordctl bench elect --rounds 200 --crash-rounds 5`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := f.NotifyContext(cmd.Context())
			defer cancel()
			return runBenchElect(ctx, f, opts)
		},
	}
	cmd.Flags().IntVar(&opts.Rounds, "rounds", 40, "handovers measured per implementation")
	cmd.Flags().IntVar(&opts.CrashRounds, "crash-rounds", 3, "crash failovers measured per implementation (each takes about the TTL, 2s)")
	return cmd
}

func runBenchElect(ctx context.Context, f *factory, opts *benchElectOptions) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	if opts.Rounds < 1 {
		return usageErrorf("invalid --rounds %d: must be at least 1", opts.Rounds)
	}
	if opts.CrashRounds < 1 {
		return usageErrorf("invalid --crash-rounds %d: must be at least 1", opts.CrashRounds)
	}
	progress := func(format string, args ...any) {
		fmt.Fprintf(f.IO.ErrOut, "bench elect: "+format+"\n", args...)
	}
	dir, err := os.MkdirTemp("", "coordctl-bench-elect-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	progress("starting embedded etcd")
	srv, err := etcdembed.Start(ctx, etcdembed.Config{DataDir: dir})
	if err != nil {
		return err
	}
	defer srv.Close()
	b := &electBench{endpoints: srv.Endpoints(), progress: progress}
	defer b.closeAll()
	observer, err := b.client()
	if err != nil {
		return err
	}
	b.observer = observer

	type measured struct {
		fresh, queued, crash []time.Duration
	}
	var res [2]measured
	impls := []struct {
		name string
		make func(ttl time.Duration) (electBenchCandidate, error)
	}{
		{"coordkit", b.electCoordkitCandidate},
		{"etcd_concurrency", b.electConcurrencyCandidate},
	}
	for i, impl := range impls {
		progress("%s: %d handovers to a candidate that just queued", impl.name, opts.Rounds)
		if res[i].fresh, err = b.rounds(ctx, impl.name+"-fresh", impl.make, 10*time.Second, opts.Rounds, 10*time.Millisecond, electBenchLeader.resign); err != nil {
			return fmt.Errorf("%s handover: %w", impl.name, err)
		}
		progress("%s: %d handovers to a candidate that waited 200ms", impl.name, opts.Rounds/2+1)
		if res[i].queued, err = b.rounds(ctx, impl.name+"-queued", impl.make, 10*time.Second, opts.Rounds/2+1, 200*time.Millisecond, electBenchLeader.resign); err != nil {
			return fmt.Errorf("%s handover: %w", impl.name, err)
		}
	}
	for i, impl := range impls {
		progress("%s: %d crash failovers at TTL 2s", impl.name, opts.CrashRounds)
		if res[i].crash, err = b.rounds(ctx, impl.name+"-crash", impl.make, 2*time.Second, opts.CrashRounds, 200*time.Millisecond, electBenchLeader.crash); err != nil {
			return fmt.Errorf("%s crash failover: %w", impl.name, err)
		}
	}
	row := func(metric string, pick func(measured) []time.Duration, pct float64) electBenchRow {
		return electBenchRow{Metric: metric, Coordkit: electPercentileMS(pick(res[0]), pct), EtcdConcurrency: electPercentileMS(pick(res[1]), pct), Unit: "ms"}
	}
	report := benchElectReport{Benchmark: "elect", Rows: []electBenchRow{
		row("handover_p50_ms", func(m measured) []time.Duration { return m.fresh }, 50),
		row("handover_p99_ms", func(m measured) []time.Duration { return m.fresh }, 99),
		row("handover_queued_200ms_p50_ms", func(m measured) []time.Duration { return m.queued }, 50),
		row("crash_failover_ttl2_ms", func(m measured) []time.Duration { return m.crash }, 50),
	}}
	return p.Print(report)
}

// electBenchCandidate campaigns in one election; electBenchLeader is what it won.
type electBenchCandidate interface {
	campaign(ctx context.Context) (electBenchLeader, error)
}

type electBenchLeader interface {
	// resign gives the leadership up at once.
	resign(ctx context.Context) error
	// crash stops keeping the lease alive without revoking it.
	crash(ctx context.Context) error
}

type electBench struct {
	endpoints []string
	progress  func(string, ...any)
	observer  *clientv3.Client
	name      string
	clients   []*clientv3.Client
	cleanups  []func()
}

func (b *electBench) client() (*clientv3.Client, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: b.endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	b.clients = append(b.clients, c)
	return c, nil
}

func (b *electBench) closeAll() {
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
func (b *electBench) rounds(ctx context.Context, name string, mk func(time.Duration) (electBenchCandidate, error), ttl time.Duration, n int, settle time.Duration, end func(electBenchLeader, context.Context) error) ([]time.Duration, error) {
	b.name = "bench/" + name
	var cands [2]electBenchCandidate
	for i := range cands {
		c, err := mk(ttl)
		if err != nil {
			return nil, err
		}
		cands[i] = c
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	leader, err := cands[0].campaign(cctx)
	if err != nil {
		return nil, err
	}
	type won struct {
		l   electBenchLeader
		err error
		at  time.Time
	}
	var samples []time.Duration
	next := 1
	for i := 0; i < n; i++ {
		res := make(chan won, 1)
		go func(c electBenchCandidate) {
			l, err := c.campaign(cctx)
			res <- won{l, err, time.Now()}
		}(cands[next])
		if err := b.waitCandidates(cctx, b.name+"/", 2); err != nil {
			cancel()
			<-res
			return nil, err
		}
		if !electSleep(cctx, settle) {
			<-res
			return nil, ctx.Err()
		}
		start := time.Now()
		if err := end(leader, cctx); err != nil {
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
			return nil, errors.New("no candidate won")
		}
		if w.err != nil {
			return nil, w.err
		}
		samples = append(samples, w.at.Sub(start))
		leader, next = w.l, 1-next
	}
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer rcancel()
	return samples, leader.resign(rctx)
}

// waitCandidates polls until n candidates are queued under prefix: the
// campaigns being measured expose no event to wait on.
func (b *electBench) waitCandidates(ctx context.Context, prefix string, n int64) error {
	for {
		resp, err := b.observer.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return err
		}
		if resp.Count >= n {
			return nil
		}
		if !electSleep(ctx, time.Millisecond) {
			return ctx.Err()
		}
	}
}

// electSleep waits d or until ctx ends; it reports whether d passed.
func electSleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// coordkit: one client per candidate, a new session per campaign.
type electCoordkitCandidate struct{ e *election.Election }

type electCoordkitLeader struct{ l *election.Leadership }

func (b *electBench) electCoordkitCandidate(ttl time.Duration) (electBenchCandidate, error) {
	c, err := b.client()
	if err != nil {
		return nil, err
	}
	e, err := election.New(c, b.name, election.WithTTL(ttl))
	if err != nil {
		return nil, err
	}
	b.cleanups = append(b.cleanups, func() { _ = e.Close() })
	return electCoordkitCandidate{e}, nil
}

func (c electCoordkitCandidate) campaign(ctx context.Context) (electBenchLeader, error) {
	l, err := c.e.Campaign(ctx, "coordkit")
	if err != nil {
		return nil, err
	}
	return electCoordkitLeader{l}, nil
}

func (l electCoordkitLeader) resign(ctx context.Context) error { return l.l.Resign(ctx) }

func (l electCoordkitLeader) crash(context.Context) error {
	l.l.Session().Orphan()
	return nil
}

// concurrency.Election: a client and session per candidate, kept across
// campaigns as etcdctl elect keeps them; a crash closes the client.
type electConcurrencyCandidate struct {
	b    *electBench
	ttl  time.Duration
	cli  *clientv3.Client
	sess *concurrency.Session
}

type electConcurrencyLeader struct {
	c *electConcurrencyCandidate
	e *concurrency.Election
}

func (b *electBench) electConcurrencyCandidate(ttl time.Duration) (electBenchCandidate, error) {
	return &electConcurrencyCandidate{b: b, ttl: ttl}, nil
}

func (c *electConcurrencyCandidate) campaign(ctx context.Context) (electBenchLeader, error) {
	if c.sess == nil {
		cli, err := c.b.client()
		if err != nil {
			return nil, err
		}
		sess, err := concurrency.NewSession(cli, concurrency.WithTTL(int(c.ttl/time.Second)), concurrency.WithContext(context.WithoutCancel(ctx)))
		if err != nil {
			return nil, err
		}
		c.cli, c.sess = cli, sess
		c.b.cleanups = append(c.b.cleanups, func() { _ = sess.Close() })
	}
	e := concurrency.NewElection(c.sess, c.b.name)
	if err := e.Campaign(ctx, "etcd"); err != nil {
		return nil, err
	}
	return electConcurrencyLeader{c, e}, nil
}

func (l electConcurrencyLeader) resign(ctx context.Context) error { return l.e.Resign(ctx) }

func (l electConcurrencyLeader) crash(context.Context) error {
	err := l.c.cli.Close() // keepalives stop; the lease is not revoked
	l.c.sess, l.c.cli = nil, nil
	return err
}
