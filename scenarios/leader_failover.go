package scenarios

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/chart"
	"github.com/coordkit/coordkit/cluster"
	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/scenarios/report"
)

// The claims of the scenarios in this file: declared in Scenario.Claims, checked by ID.
const (
	claimCrashFailoverTTL ClaimID = "crash-failover-one-ttl"
	claimGracefulAtOnce   ClaimID = "graceful-handover-at-once"
	claimTokenIncreases   ClaimID = "token-increases"
	claimDeposedRejected  ClaimID = "deposed-write-rejected"
)

func leaderFailover() Scenario {
	return Scenario{
		Name:    "leader-failover",
		Summary: "Leader election on etcd: how long failover takes after a crash and after a graceful resign, the fencing token rising at each new leader, and the deposed leader's late write rejected.",
		Claims: []Claim{
			{ID: claimCrashFailoverTTL, Kind: Timing, Text: "after the leader crashes, the next candidate wins once the old lease expires: failover takes about one TTL"},
			{ID: claimGracefulAtOnce, Kind: Timing, Text: "a graceful resign hands over at once: failover in milliseconds, far below the TTL"},
			{ID: claimTokenIncreases, Kind: Safety, Text: "the fencing token increases at each new leader"},
			{ID: claimDeposedRejected, Kind: Safety, Text: "the deposed leader's late write is rejected by the fenced resource (409)"},
		},
		Run: runLeaderFailover,
	}
}

type campaignResult struct {
	l   *election.Leadership
	err error
	at  time.Time
}

// failoverRun is the state of one run of leader-failover.
type failoverRun struct {
	env       Env
	rep       *report.Report
	rec       *report.Recorder
	ttl       time.Duration
	closers   []func()
	rc        *fencing.Client // the fenced resource
	clis      []*clientv3.Client
	elections map[string]*election.Election
	keys      string // the prefix of the election's keys
}

// failoverObs is what the act observed.
type failoverObs struct {
	a, b, c                         campaignResult
	crashFailover, gracefulFailover time.Duration
	lateA, lateB                    error // the deposed leaders' late writes
	entry                           fencing.Entry
}

const failoverScope = "svc"

func runLeaderFailover(ctx context.Context, env Env) (*report.Report, error) {
	r := &failoverRun{env: env, rep: report.New("leader-failover", ""), rec: report.NewRecorder(nil), ttl: 2 * time.Second,
		elections: map[string]*election.Election{}}
	defer r.close()
	if err := r.setup(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	obs, err := r.act(ctx)
	if err != nil {
		return nil, err
	}
	r.judge(obs)
	r.rep.Timeline = r.rec.Timeline()
	return r.rep, nil
}

func (r *failoverRun) close() {
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
}

// setup starts etcd, the fenced resource and one election handle per
// candidate, each on its own client.
func (r *failoverRun) setup(ctx context.Context) error {
	conn, err := startEtcd(ctx, r.env, "leader-failover")
	if err != nil {
		return err
	}
	r.closers = append(r.closers, conn.Close)
	dataDir, err := r.env.freshDir("failover-resource")
	if err != nil {
		return err
	}
	res, err := fencing.StartLocal(fencing.ResourceConfig{DataDir: dataDir})
	if err != nil {
		return err
	}
	r.closers = append(r.closers, func() { res.Close() })
	r.rc = &fencing.Client{BaseURL: res.URL, HTTP: &http.Client{Timeout: 5 * time.Second}}
	for _, cand := range []string{"A", "B", "C"} {
		cli, err := conn.Client(ctx)
		if err != nil {
			return err
		}
		r.clis = append(r.clis, cli)
		r.keys = conn.Prefix + "/" + failoverElection + "/"
		e, err := election.New(cli, failoverElection, election.WithPrefix(conn.Prefix+"/"), election.WithTTL(r.ttl))
		if err != nil {
			return err
		}
		r.closers = append(r.closers, func() { _ = e.Close() })
		r.elections[cand] = e
		r.rec.State(cand, report.StateIdle)
	}
	return nil
}

// failoverElection is the name the candidates campaign in, under the run's
// prefix.
const failoverElection = "svc"

// candidates waits until n candidates have keys in the election.
func (r *failoverRun) candidates(ctx context.Context, n int64) error {
	prefix := r.keys
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := r.clis[0].Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return err
		}
		if resp.Count >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d candidates after 10s, want %d", resp.Count, n)
		}
		cluster.Sleep(ctx, 5*time.Millisecond)
	}
}

// campaign starts cand's campaign; its result arrives on the channel.
func (r *failoverRun) campaign(ctx context.Context, cand string) chan campaignResult {
	ch := make(chan campaignResult, 1)
	r.rec.State(cand, report.StateWaiting)
	go func() {
		l, err := r.elections[cand].Campaign(ctx, cand)
		ch <- campaignResult{l, err, time.Now()}
	}()
	return ch
}

// await waits for a campaign's result.
func (r *failoverRun) await(ctx context.Context, cand string, ch chan campaignResult) (campaignResult, error) {
	select {
	case res := <-ch:
		if res.err != nil {
			return res, fmt.Errorf("campaign of %s: %w", cand, res.err)
		}
		return res, nil
	case <-ctx.Done():
		return campaignResult{}, ctx.Err()
	}
}

// write writes value to the fenced resource with l's token.
func (r *failoverRun) write(ctx context.Context, who string, l *election.Leadership, value string) error {
	call := time.Now()
	_, err := r.rc.Put(ctx, "state", value, l.Token(), failoverScope)
	o := report.OutcomeOK
	desc := fmt.Sprintf("write %q with token %d", value, l.Token())
	if err != nil {
		o = report.OutcomeFail
		desc += ": " + verdictOf(err)
	}
	r.rec.Op(who, desc, call, time.Now(), o)
	return err
}

// lead marks cand the leader and has it write.
func (r *failoverRun) lead(ctx context.Context, cand string, l *election.Leadership) error {
	r.rec.State(cand, report.StateLeader)
	r.rec.Mark(cand, fmt.Sprintf("%s leads, token %d", cand, l.Token()))
	return r.write(ctx, cand, l, cand+" was here")
}

// act: A leads, B and C queue; A crashes (B takes over after A's lease
// expires) and wakes to write late; B resigns (C takes over at once) and
// writes late.
func (r *failoverRun) act(ctx context.Context) (failoverObs, error) {
	var o failoverObs
	var err error
	r.env.Progressf("leader-failover: A, B and C campaign (TTL %s)", r.ttl)
	if o.a, err = r.await(ctx, "A", r.campaign(ctx, "A")); err != nil {
		return o, err
	}
	if err := r.lead(ctx, "A", o.a.l); err != nil {
		return o, err
	}
	bch := r.campaign(ctx, "B")
	if err := r.candidates(ctx, 2); err != nil {
		return o, err
	}
	cch := r.campaign(ctx, "C")
	if err := r.candidates(ctx, 3); err != nil {
		return o, err
	}

	// A crashes: its keepalives stop, its lease runs out on the server.
	r.env.Progressf("leader-failover: A crashes")
	crashAt := time.Now()
	o.a.l.Session().Orphan()
	r.rec.State("A", report.StateDown)
	r.rec.FaultStart("A crashed (no keepalives)")
	if o.b, err = r.await(ctx, "B", bch); err != nil {
		return o, err
	}
	o.crashFailover = o.b.at.Sub(crashAt)
	if err := r.lead(ctx, "B", o.b.l); err != nil {
		return o, err
	}
	// A was only paused, not dead: it wakes and writes with its old token.
	r.rec.FaultEnd("A crashed (no keepalives)")
	r.rec.State("A", report.StatePaused)
	o.lateA = r.write(ctx, "A", o.a.l, "A again (late)")
	r.rec.State("A", report.StateIdle)

	// B resigns; C, next in line, takes over.
	r.env.Progressf("leader-failover: B resigns")
	resignAt := time.Now()
	if err := o.b.l.Resign(ctx); err != nil {
		return o, fmt.Errorf("resign of B: %w", err)
	}
	r.rec.State("B", report.StateIdle)
	if o.c, err = r.await(ctx, "C", cch); err != nil {
		return o, err
	}
	o.gracefulFailover = o.c.at.Sub(resignAt)
	if err := r.lead(ctx, "C", o.c.l); err != nil {
		return o, err
	}
	o.lateB = r.write(ctx, "B", o.b.l, "B again (late)")
	if err := o.c.l.Resign(ctx); err != nil {
		return o, fmt.Errorf("resign of C: %w", err)
	}
	r.rec.State("C", report.StateIdle)
	if o.entry, err = r.rc.Get(ctx, "state"); err != nil {
		return o, err
	}
	return o, nil
}

// judge turns the observations into the four verdicts, metrics, a chart
// and notes.
func (r *failoverRun) judge(o failoverObs) {
	rep := r.rep
	check(rep, claimCrashFailoverTTL, fmt.Sprintf("failover about one TTL (%s): between %s and %s", r.ttl, r.ttl/2, r.ttl+time.Second),
		fmt.Sprintf("B won %s after A's crash", o.crashFailover.Round(time.Millisecond)),
		o.crashFailover >= r.ttl/2 && o.crashFailover <= r.ttl+time.Second)
	check(rep, claimGracefulAtOnce, fmt.Sprintf("C wins within %s of B's resign (a tenth of the TTL)", r.ttl/10),
		fmt.Sprintf("C won %s after B resigned", o.gracefulFailover.Round(100*time.Microsecond)),
		o.gracefulFailover < r.ttl/10)
	check(rep, claimTokenIncreases, "token(A) < token(B) < token(C)",
		fmt.Sprintf("A %d, B %d, C %d", o.a.l.Token(), o.b.l.Token(), o.c.l.Token()),
		o.a.l.Token() < o.b.l.Token() && o.b.l.Token() < o.c.l.Token())
	var sa, sb *fencing.StaleError
	check(rep, claimDeposedRejected, "A's write after B took over and B's after C took over: both rejected as stale",
		fmt.Sprintf("A: %s; B: %s; the resource holds %q (token %d)", verdictOf(o.lateA), verdictOf(o.lateB), o.entry.Value, o.entry.Token),
		errors.As(o.lateA, &sa) && errors.As(o.lateB, &sb) && o.entry.Value == "C was here")
	rep.Metric("crash_failover_ms", cluster.Ms(o.crashFailover), "ms")
	rep.Metric("graceful_failover_ms", cluster.Ms(o.gracefulFailover), "ms")
	rep.Metric("ttl_ms", cluster.Ms(r.ttl), "ms")
	rep.Metric("token_a", float64(o.a.l.Token()), "")
	rep.Metric("token_b", float64(o.b.l.Token()), "")
	rep.Metric("token_c", float64(o.c.l.Token()), "")
	rep.AddChart(chart.Chart{Title: "Failover time", YLabel: "ms", Categories: []string{"crash (lease expiry)", "graceful resign"},
		Series: []chart.Series{{Name: "measured", Points: []chart.Point{{X: 0, Y: cluster.Ms(o.crashFailover)}, {X: 1, Y: cluster.Ms(o.gracefulFailover)}}}}})
	rep.Note("A crashed leader is replaced only when its lease expires on the server, so the TTL is the price of failover after a crash; a shorter TTL fails over faster but makes a slow keepalive look like a crash. A leader that resigns deletes its key and the next candidate, watching it, takes over at once.")
	rep.Note("Here A was not dead but frozen: its session stopped sending keepalives. When it woke and wrote, the resource had already seen B's larger token.")
}
