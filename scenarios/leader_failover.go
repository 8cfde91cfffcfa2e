package scenarios

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

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

func runLeaderFailover(ctx context.Context, env Env) (*report.Report, error) {
	rep := report.New("leader-failover", "")
	conn, err := startEtcd(ctx, env, "leader-failover")
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	res, err := fencing.StartLocal(fencing.ResourceConfig{DataDir: filepath.Join(env.TempDir, "failover-resource")})
	if err != nil {
		return nil, err
	}
	defer res.Close()
	rc := &fencing.Client{BaseURL: res.URL, HTTP: &http.Client{Timeout: 5 * time.Second}}
	const name, scope = "svc", "svc"
	ttl := 2 * time.Second
	rec := report.NewRecorder(nil)
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()

	elections := map[string]*election.Election{}
	var clis []*clientv3.Client
	for _, cand := range []string{"A", "B", "C"} {
		cli, err := conn.Client(ctx)
		if err != nil {
			return nil, err
		}
		clis = append(clis, cli)
		e, err := election.New(cli, name, election.WithPrefix(conn.Prefix+"/"), election.WithTTL(ttl))
		if err != nil {
			return nil, err
		}
		defer e.Close()
		elections[cand] = e
		rec.State(cand, report.StateIdle)
	}
	prefix := elections["A"].Prefix()
	candidates := func(n int64) error {
		deadline := time.Now().Add(10 * time.Second)
		for {
			r, err := clis[0].Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
			if err != nil {
				return err
			}
			if r.Count >= n {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%d candidates after 10s, want %d", r.Count, n)
			}
			sleepCtx(ctx, 5*time.Millisecond)
		}
	}
	campaign := func(cand string) chan campaignResult {
		ch := make(chan campaignResult, 1)
		rec.State(cand, report.StateWaiting)
		go func() {
			l, err := elections[cand].Campaign(ctx, cand)
			ch <- campaignResult{l, err, time.Now()}
		}()
		return ch
	}
	write := func(who string, l *election.Leadership, value string) error {
		call := time.Now()
		_, err := rc.Put(ctx, "state", value, l.Token(), scope)
		o := report.OutcomeOK
		desc := fmt.Sprintf("write %q with token %d", value, l.Token())
		if err != nil {
			o = report.OutcomeFail
			desc += ": " + verdictOf(err)
		}
		rec.Op(who, desc, call, time.Now(), o)
		return err
	}

	env.Progressf("leader-failover: A, B and C campaign (TTL %s)", ttl)
	a := <-campaign("A")
	if a.err != nil {
		return nil, fmt.Errorf("campaign of A: %w", a.err)
	}
	rec.State("A", report.StateLeader)
	rec.Mark("A", fmt.Sprintf("A leads, token %d", a.l.Token()))
	if err := write("A", a.l, "A was here"); err != nil {
		return nil, err
	}
	bch := campaign("B")
	if err := candidates(2); err != nil {
		return nil, err
	}
	cch := campaign("C")
	if err := candidates(3); err != nil {
		return nil, err
	}

	// A crashes: its keepalives stop, its lease runs out on the server.
	env.Progressf("leader-failover: A crashes")
	crashAt := time.Now()
	a.l.Session().Orphan()
	rec.State("A", report.StateDown)
	rec.FaultStart("A crashed (no keepalives)")
	var b campaignResult
	select {
	case b = <-bch:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if b.err != nil {
		return nil, fmt.Errorf("campaign of B: %w", b.err)
	}
	crashFailover := b.at.Sub(crashAt)
	rec.State("B", report.StateLeader)
	rec.Mark("B", fmt.Sprintf("B leads, token %d", b.l.Token()))
	if err := write("B", b.l, "B was here"); err != nil {
		return nil, err
	}
	// A was only paused, not dead: it wakes and writes with its old token.
	rec.FaultEnd("A crashed (no keepalives)")
	rec.State("A", report.StatePaused)
	lateA := write("A", a.l, "A again (late)")
	rec.State("A", report.StateIdle)

	// B resigns; C, next in line, takes over.
	env.Progressf("leader-failover: B resigns")
	resignAt := time.Now()
	if err := b.l.Resign(ctx); err != nil {
		return nil, fmt.Errorf("resign of B: %w", err)
	}
	rec.State("B", report.StateIdle)
	var cr campaignResult
	select {
	case cr = <-cch:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if cr.err != nil {
		return nil, fmt.Errorf("campaign of C: %w", cr.err)
	}
	gracefulFailover := cr.at.Sub(resignAt)
	rec.State("C", report.StateLeader)
	rec.Mark("C", fmt.Sprintf("C leads, token %d", cr.l.Token()))
	if err := write("C", cr.l, "C was here"); err != nil {
		return nil, err
	}
	lateB := write("B", b.l, "B again (late)")
	if err := cr.l.Resign(ctx); err != nil {
		return nil, fmt.Errorf("resign of C: %w", err)
	}
	rec.State("C", report.StateIdle)
	entry, err := rc.Get(ctx, "state")
	if err != nil {
		return nil, err
	}

	check(rep, claimCrashFailoverTTL, fmt.Sprintf("failover about one TTL (%s): between %s and %s", ttl, ttl/2, ttl+time.Second),
		fmt.Sprintf("B won %s after A's crash", crashFailover.Round(time.Millisecond)),
		crashFailover >= ttl/2 && crashFailover <= ttl+time.Second)
	check(rep, claimGracefulAtOnce, fmt.Sprintf("C wins within %s of B's resign (a tenth of the TTL)", ttl/10),
		fmt.Sprintf("C won %s after B resigned", gracefulFailover.Round(100*time.Microsecond)),
		gracefulFailover < ttl/10)
	check(rep, claimTokenIncreases, "token(A) < token(B) < token(C)",
		fmt.Sprintf("A %d, B %d, C %d", a.l.Token(), b.l.Token(), cr.l.Token()),
		a.l.Token() < b.l.Token() && b.l.Token() < cr.l.Token())
	var sa, sb *fencing.StaleError
	check(rep, claimDeposedRejected, "A's write after B took over and B's after C took over: both rejected as stale",
		fmt.Sprintf("A: %s; B: %s; the resource holds %q (token %d)", verdictOf(lateA), verdictOf(lateB), entry.Value, entry.Token),
		errors.As(lateA, &sa) && errors.As(lateB, &sb) && entry.Value == "C was here")
	rep.Metric("crash_failover_ms", ms(crashFailover), "ms")
	rep.Metric("graceful_failover_ms", ms(gracefulFailover), "ms")
	rep.Metric("ttl_ms", ms(ttl), "ms")
	rep.Metric("token_a", float64(a.l.Token()), "")
	rep.Metric("token_b", float64(b.l.Token()), "")
	rep.Metric("token_c", float64(cr.l.Token()), "")
	rep.AddChart(report.Chart{Title: "Failover time", YLabel: "ms", Categories: []string{"crash (lease expiry)", "graceful resign"},
		Series: []report.Series{{Name: "measured", Points: []report.Point{{X: 0, Y: ms(crashFailover)}, {X: 1, Y: ms(gracefulFailover)}}}}})
	rep.Note("A crashed leader is replaced only when its lease expires on the server, so the TTL is the price of failover after a crash; a shorter TTL fails over faster but makes a slow keepalive look like a crash. A leader that resigns deletes its key and the next candidate, watching it, takes over at once.")
	rep.Note("Here A was not dead but frozen: its session stopped sending keepalives. When it woke and wrote, the resource had already seen B's larger token.")
	rep.Timeline = rec.Timeline()
	return rep, nil
}
