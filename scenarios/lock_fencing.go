package scenarios

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"github.com/coordkit/coordkit/claim"
	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/lock"
	"github.com/coordkit/coordkit/scenarios/report"
	"github.com/coordkit/coordkit/session"
)

// The claims of lock-fencing, declared in its Scenario.Claims.
const (
	claimPausedHolderWrites   ClaimID = "paused-holder-writes"
	claimUnfencedLostUpdate   ClaimID = "unfenced-lost-update"
	claimFencedRejects        ClaimID = "fenced-rejects-late-write"
	claimRedisStyleTwoWriters ClaimID = "redis-style-two-writers"
)

func lockWithoutFencing() Scenario {
	return Scenario{
		Name:    "lock-without-fencing",
		Summary: "A lock holder frozen past its lease writes after its successor: without a fencing token the resource takes both writes (a lost update); with the token it rejects the late one (409).",
		Claims: []Claim{
			{ID: claimPausedHolderWrites, Kind: Safety, Text: "a lock alone cannot stop a paused holder: after its lease expires the next holder gets the lock, and the paused one still writes"},
			{ID: claimUnfencedLostUpdate, Kind: Safety, Text: "without fencing the resource accepts both writes and the successor's update is lost"},
			{ID: claimFencedRejects, Kind: Safety, Text: "with the fencing token (the key's create revision) the resource rejects the late write with 409"},
			{ID: claimRedisStyleTwoWriters, Kind: Safety, Text: "a Redis-style lock (a lease with no token) is an optimisation, not a guarantee: the same pause gives two writers"},
		},
		Run: runLockWithoutFencing,
	}
}

const (
	lockTTL        = 2 * time.Second // etcd's minimum lease TTL with default timing
	initialBalance = 100
	depositA       = 50
	depositB       = 30
)

func runLockWithoutFencing(ctx context.Context, env Env) (*report.Report, error) {
	rep := report.New("lock-without-fencing", "")
	conn, err := startEtcd(ctx, env, "lock-without-fencing")
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	cliA, err := conn.Client(ctx)
	if err != nil {
		return nil, err
	}
	cliB, err := conn.Client(ctx)
	if err != nil {
		return nil, err
	}
	plain, err := fencing.StartLocal(fencing.ResourceConfig{DataDir: filepath.Join(env.TempDir, "unfenced"), Unfenced: true})
	if err != nil {
		return nil, err
	}
	defer plain.Close()
	fenced, err := fencing.StartLocal(fencing.ResourceConfig{DataDir: filepath.Join(env.TempDir, "fenced")})
	if err != nil {
		return nil, err
	}
	defer fenced.Close()
	redis, err := fencing.StartLocal(fencing.ResourceConfig{DataDir: filepath.Join(env.TempDir, "redis-style"), Unfenced: true})
	if err != nil {
		return nil, err
	}
	defer redis.Close()

	hc := &http.Client{Timeout: 5 * time.Second}
	resources := []struct {
		name string
		c    *fencing.Client
	}{
		{"unfenced", &fencing.Client{BaseURL: plain.URL, HTTP: hc}},
		{"fenced", &fencing.Client{BaseURL: fenced.URL, HTTP: hc}},
	}
	redisC := &fencing.Client{BaseURL: redis.URL, HTTP: hc}
	const scope, key = "jobs/balance", "balance"

	rec := report.NewRecorder(nil)
	op := func(client, desc string, call time.Time, err error) {
		outcome := report.OutcomeOK
		if err != nil {
			outcome = report.OutcomeFail
			desc += ": " + shortErr(err)
		}
		rec.Op(client, desc, call, time.Now(), outcome)
	}
	// The balance starts at 100 on every resource (token 1: the setup).
	for _, r := range append(resources, struct {
		name string
		c    *fencing.Client
	}{"redis-style", redisC}) {
		if _, err := r.c.Put(ctx, key, strconv.Itoa(initialBalance), 1, scope); err != nil {
			return nil, fmt.Errorf("set up %s resource: %w", r.name, err)
		}
	}

	// Round 1: the fenced lock. A is frozen: its session sends no keepalive
	// after the grant (interval an hour), as a process stopped by SIGSTOP
	// or a long GC pause would not.
	env.Progressf("lock-without-fencing: A takes the lock and freezes (lease TTL %s, no keepalives)", lockTTL)
	mA, err := lock.New(cliA, "balance", lock.WithPrefix(conn.Prefix+"/"), lock.WithTTL(lockTTL),
		lock.WithSessionOptions(session.WithKeepAliveInterval(time.Hour)))
	if err != nil {
		return nil, err
	}
	defer mA.Close()
	mB, err := lock.New(cliB, "balance", lock.WithPrefix(conn.Prefix+"/"), lock.WithTTL(lockTTL))
	if err != nil {
		return nil, err
	}
	defer mB.Close()

	rec.State("A", report.StateIdle)
	rec.State("B", report.StateIdle)
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	t0 := time.Now()
	heldA, err := mA.Lock(lctx)
	if err != nil {
		return nil, fmt.Errorf("lock by A: %w", err)
	}
	rec.State("A", report.StateHolder)
	rec.Mark("A", fmt.Sprintf("A holds the lock, token %d", heldA.Token()))
	acquiredA := time.Now()
	op("A", "lock → token "+heldA.Token().String(), t0, nil)

	// A reads the balance on both resources and plans its deposit.
	readsA := map[string]int{}
	for _, r := range resources {
		call := time.Now()
		e, err := r.c.Get(lctx, key)
		op("A", "read "+r.name+" balance", call, err)
		if err != nil {
			return nil, err
		}
		readsA[r.name], _ = strconv.Atoi(e.Value)
	}
	rec.State("A", report.StatePaused)
	rec.FaultStart("A frozen: no keepalives, no progress")
	lostAt := make(chan time.Time, 1)
	go func() {
		select {
		case <-heldA.Lost():
			lostAt <- time.Now()
		case <-lctx.Done():
		}
	}()

	// B asks for the lock and gets it once A's lease expires on the server.
	env.Progressf("lock-without-fencing: B waits for the lock")
	rec.State("B", report.StateWaiting)
	callB := time.Now()
	heldB, err := mB.Lock(lctx)
	if err != nil {
		return nil, fmt.Errorf("lock by B: %w", err)
	}
	acquiredB := time.Now()
	rec.State("B", report.StateHolder)
	rec.Mark("B", fmt.Sprintf("A's lease expired; B holds the lock, token %d", heldB.Token()))
	op("B", "lock → token "+heldB.Token().String(), callB, nil)
	var aLost time.Time
	select {
	case aLost = <-lostAt:
	default:
	}

	writesB := map[string]error{}
	for _, r := range resources {
		call := time.Now()
		e, err := r.c.Get(lctx, key)
		op("B", "read "+r.name+" balance", call, err)
		if err != nil {
			return nil, err
		}
		v, _ := strconv.Atoi(e.Value)
		call = time.Now()
		_, err = r.c.Put(lctx, key, strconv.Itoa(v+depositB), heldB.Token(), scope)
		op("B", fmt.Sprintf("write %s balance=%d (token %d)", r.name, v+depositB, heldB.Token()), call, err)
		writesB[r.name] = err
	}
	if err := heldB.Unlock(lctx); err != nil {
		return nil, fmt.Errorf("unlock by B: %w", err)
	}
	rec.State("B", report.StateIdle)

	// A wakes and, not having checked since, writes what it planned.
	rec.FaultEnd("A frozen: no keepalives, no progress")
	rec.State("A", report.StateHolder)
	rec.Mark("A", "A wakes and writes")
	writesA := map[string]error{}
	for _, r := range resources {
		call := time.Now()
		_, err := r.c.Put(lctx, key, strconv.Itoa(readsA[r.name]+depositA), heldA.Token(), scope)
		op("A", fmt.Sprintf("late write %s balance=%d (token %d)", r.name, readsA[r.name]+depositA, heldA.Token()), call, err)
		writesA[r.name] = err
	}
	_ = heldA.Unlock(lctx) // lost: it only cleans up
	rec.State("A", report.StateIdle)

	finals := map[string]int{}
	for _, r := range resources {
		e, err := r.c.Get(lctx, key)
		if err != nil {
			return nil, err
		}
		finals[r.name], _ = strconv.Atoi(e.Value)
	}

	waitB := acquiredB.Sub(acquiredA)
	rep.Metric("token_a", float64(heldA.Token()), "")
	rep.Metric("token_b", float64(heldB.Token()), "")
	rep.Metric("lease_ttl_ms", float64(lockTTL.Milliseconds()), "ms")
	rep.Metric("b_acquired_after_ms", ms(waitB), "ms")
	if !aLost.IsZero() {
		rep.Metric("a_loss_signalled_after_ms", ms(aLost.Sub(acquiredA)), "ms")
	}
	check(rep, claimPausedHolderWrites, fmt.Sprintf("B acquires about one TTL (%s) after A, with a larger token; A's write is still sent", lockTTL),
		fmt.Sprintf("B acquired %s after A; tokens A=%d, B=%d; A's session declared the loss %s", waitB.Round(time.Millisecond), heldA.Token(), heldB.Token(), lossDesc(aLost, acquiredA, acquiredB)),
		heldB.Token() > heldA.Token() && waitB >= lockTTL/2)

	wantLost := readsA["unfenced"] + depositA
	check(rep, claimUnfencedLostUpdate, fmt.Sprintf("both writes accepted; final balance %d (A's stale %d+%d), B's +%d gone", wantLost, readsA["unfenced"], depositA, depositB),
		fmt.Sprintf("B's write %s, A's late write %s; final balance %d", verdictOf(writesB["unfenced"]), verdictOf(writesA["unfenced"]), finals["unfenced"]),
		writesB["unfenced"] == nil && writesA["unfenced"] == nil && finals["unfenced"] == wantLost)

	var stale *fencing.StaleError
	isStale := errors.As(writesA["fenced"], &stale)
	check(rep, claimFencedRejects, fmt.Sprintf("A's token %d < floor %d: rejected (409); final balance %d (B's)", heldA.Token(), heldB.Token(), initialBalance+depositB),
		fmt.Sprintf("B's write %s, A's late write %s; final balance %d", verdictOf(writesB["fenced"]), verdictOf(writesA["fenced"]), finals["fenced"]),
		writesB["fenced"] == nil && isStale && stale.Floor == heldB.Token() && finals["fenced"] == initialBalance+depositB)

	// Round 2: a Redis-style lock: SET NX with an expiry, here a claim on an
	// etcd lease that A does not renew. There is no token to send.
	env.Progressf("lock-without-fencing: the same pause with a Redis-style lock (a lease, no token)")
	rec.State("A", report.StateIdle)
	rec.Mark("", "Redis-style lock: a lease, no token")
	name := "redis-style-balance"
	call := time.Now()
	ca, err := claim.Claim(lctx, cliA, name, "A", claim.WithPrefix(conn.Prefix), claim.WithTTL(lockTTL))
	op("A", "SET NX PX (claim with a lease)", call, err)
	if err != nil || !ca.Won {
		return nil, fmt.Errorf("redis-style lock by A: won=%v err=%v", ca.Won, err)
	}
	rec.State("A", report.StateHolder)
	e, err := redisC.Get(lctx, key)
	if err != nil {
		return nil, err
	}
	readA, _ := strconv.Atoi(e.Value)
	rec.State("A", report.StatePaused)
	rec.FaultStart("A frozen (Redis-style lock)")
	rec.State("B", report.StateWaiting)
	callB = time.Now()
	var cb claim.Result
	for {
		cb, err = claim.Claim(lctx, cliB, name, "B", claim.WithPrefix(conn.Prefix), claim.WithTTL(lockTTL))
		if err != nil {
			return nil, fmt.Errorf("redis-style lock by B: %w", err)
		}
		if cb.Won {
			break
		}
		select {
		case <-lctx.Done():
			return nil, lctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	op("B", "SET NX PX (retried until A's lease expired)", callB, nil)
	rec.State("B", report.StateHolder)
	e, err = redisC.Get(lctx, key)
	if err != nil {
		return nil, err
	}
	readB, _ := strconv.Atoi(e.Value)
	// With no token, both send the same constant: the resource cannot tell them apart.
	call = time.Now()
	_, errB := redisC.Put(lctx, key, strconv.Itoa(readB+depositB), 1, scope)
	op("B", fmt.Sprintf("write balance=%d (no token)", readB+depositB), call, errB)
	rec.State("B", report.StateIdle)
	rec.FaultEnd("A frozen (Redis-style lock)")
	rec.State("A", report.StateHolder)
	call = time.Now()
	_, errA := redisC.Put(lctx, key, strconv.Itoa(readA+depositA), 1, scope)
	op("A", fmt.Sprintf("late write balance=%d (no token)", readA+depositA), call, errA)
	rec.State("A", report.StateIdle)
	e, err = redisC.Get(lctx, key)
	if err != nil {
		return nil, err
	}
	finalRedis, _ := strconv.Atoi(e.Value)
	check(rep, claimRedisStyleTwoWriters, fmt.Sprintf("B gets the lease after A's expires; both writes land; final %d, B's +%d lost", readA+depositA, depositB),
		fmt.Sprintf("B won the lease %s after asking; B's write %s, A's late write %s; final balance %d",
			time.Since(callB).Round(time.Millisecond), verdictOf(errB), verdictOf(errA), finalRedis),
		cb.Won && errA == nil && errB == nil && finalRedis == readA+depositA)

	rep.AddTable(report.Table{
		Title:   "The balance on each resource (starts at 100; A deposits 50, B deposits 30)",
		Columns: []string{"resource", "A read", "B's write", "A's late write", "final", "correct if serial"},
		Rows: [][]string{
			{"unfenced", strconv.Itoa(readsA["unfenced"]), verdictOf(writesB["unfenced"]), verdictOf(writesA["unfenced"]), strconv.Itoa(finals["unfenced"]), strconv.Itoa(initialBalance + depositA + depositB)},
			{"fenced (token checked)", strconv.Itoa(readsA["fenced"]), verdictOf(writesB["fenced"]), verdictOf(writesA["fenced"]), strconv.Itoa(finals["fenced"]), strconv.Itoa(initialBalance + depositA + depositB)},
			{"Redis-style lock, unfenced", strconv.Itoa(readA), verdictOf(errB), verdictOf(errA), strconv.Itoa(finalRedis), strconv.Itoa(initialBalance + depositA + depositB)},
		},
	})
	rep.Note("With fencing A's deposit is not silently applied over B's: A gets a 409 and must re-read and retry under a new lock. Without it the resource cannot tell a current holder from a former one.")
	rep.Note("A's session declared the loss at its local deadline (last keepalive sent + TTL - margin); a process that is frozen cannot act on that signal, which is why the resource must check the token.")
	rep.Timeline = rec.Timeline()
	return rep, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func verdictOf(err error) string {
	if err == nil {
		return "accepted"
	}
	var stale *fencing.StaleError
	if errors.As(err, &stale) {
		return fmt.Sprintf("rejected 409 (token %d < floor %d)", stale.Token, stale.Floor)
	}
	return "failed: " + shortErr(err)
}

func lossDesc(lost, acquiredA, acquiredB time.Time) string {
	if lost.IsZero() {
		return "only later"
	}
	when := "before"
	if lost.After(acquiredB) {
		when = "after"
	}
	return fmt.Sprintf("%s after acquiring, %s B got the lock", lost.Sub(acquiredA).Round(time.Millisecond), when)
}

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}
