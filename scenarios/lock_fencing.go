package scenarios

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/claim"
	"github.com/coordkit/coordkit/cluster"
	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/lock"
	"github.com/coordkit/coordkit/scenarios/report"
	"github.com/coordkit/coordkit/session"
)

// The claims of the scenarios in this file: declared in Scenario.Claims, checked by ID.
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
	defaultLockTTL = 2 * time.Second // etcd's minimum lease TTL with default timing
	initialBalance = 100
	depositA       = 50
	depositB       = 30
	balanceScope   = "jobs/balance"
	balanceKey     = "balance"
)

// fencingResource is one of the resources the holders write to.
type fencingResource struct {
	name string
	c    *fencing.Client
}

// fencingRun is the state of one run of lock-without-fencing: what setup
// built, what the acts observed, and what judge turns into verdicts.
type fencingRun struct {
	env     Env
	ttl     time.Duration
	rep     *report.Report
	rec     *report.Recorder
	closers []func()

	conn       *etcdConn
	cliA, cliB *clientv3.Client
	// resources are the unfenced and the fenced resource of round 1;
	// redis is round 2's (unfenced, written without a token).
	resources []fencingResource
	redis     *fencing.Client
	lease     leaseLock // round 2's lock: real Redis with Env.Redis, else the model

	// Round 1: the fenced lock.
	heldA, heldB         *lock.Held
	acquiredA, acquiredB time.Time
	aLost                time.Time // zero if A's loss was not signalled before B held the lock
	readsA, finals       map[string]int
	writesA, writesB     map[string]error
	// Round 2: the Redis lock (real or modelled).
	redisWon               bool
	redisReadA, redisFinal int
	redisErrA, redisErrB   error
	redisWait              time.Duration
	redisReleaseA          error // what the lock told A when it released after its write
}

func runLockWithoutFencing(ctx context.Context, env Env) (*report.Report, error) {
	r := &fencingRun{env: env, ttl: env.LockTTL, rep: report.New("lock-without-fencing", ""), rec: report.NewRecorder(nil)}
	if r.ttl == 0 {
		r.ttl = defaultLockTTL
	}
	defer r.close()
	if err := r.setup(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second+2*r.ttl)
	defer cancel()
	if err := r.fencedRound(ctx); err != nil {
		return nil, err
	}
	if err := r.redisRound(ctx); err != nil {
		return nil, err
	}
	r.judge()
	return r.rep, nil
}

func (r *fencingRun) close() {
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
}

// setup starts etcd, two clients and the three resources, and sets the
// balance to 100 on each (token 1: the setup).
func (r *fencingRun) setup(ctx context.Context) error {
	r.rec.Heading("A lock is only as safe as the resource it protects")
	if r.env.Redis != "" {
		// First: an address nobody answers on fails the run before etcd starts.
		l, err := dialRedsyncLease(ctx, r.env.Redis, r.ttl)
		if err != nil {
			return err
		}
		r.lease = l
		r.closers = append(r.closers, l.close)
	}
	conn, err := startEtcd(ctx, r.env, "lock-without-fencing")
	if err != nil {
		return err
	}
	r.conn = conn
	r.closers = append(r.closers, conn.Close)
	if r.cliA, err = conn.Client(ctx); err != nil {
		return err
	}
	if r.cliB, err = conn.Client(ctx); err != nil {
		return err
	}
	if conn.Embedded {
		r.rec.Step("etcd", "setup", "started an embedded etcd at "+conn.Endpoints[0], 0)
	}
	if r.lease == nil {
		r.lease = &modelLease{cliA: r.cliA, cliB: r.cliB, opts: []claim.Option{claim.WithPrefix(conn.Prefix), claim.WithTTL(r.ttl)}}
	}
	r.rec.Step("redis", "setup", "the Redis round will use "+r.lease.describe(), 0)
	hc := &http.Client{Timeout: 5 * time.Second}
	start := func(dir string, unfenced bool) (*fencing.Client, error) {
		dataDir, err := r.env.freshDir(dir)
		if err != nil {
			return nil, err
		}
		srv, err := fencing.StartLocal(fencing.ResourceConfig{DataDir: dataDir, Unfenced: unfenced})
		if err != nil {
			return nil, err
		}
		r.closers = append(r.closers, func() { srv.Close() })
		return &fencing.Client{BaseURL: srv.URL, HTTP: hc}, nil
	}
	unfenced, err := start("unfenced", true)
	if err != nil {
		return err
	}
	fenced, err := start("fenced", false)
	if err != nil {
		return err
	}
	if r.redis, err = start("redis-style", true); err != nil {
		return err
	}
	r.resources = []fencingResource{{"unfenced", unfenced}, {"fenced", fenced}}
	r.rec.Step("resource", "setup", "a resource that checks fencing tokens at "+fenced.BaseURL, 0)
	r.rec.Step("resource", "setup", "and one that does not (how most locks are used) at "+unfenced.BaseURL, 0)
	for _, res := range append(r.resources, fencingResource{"redis-style", r.redis}) {
		if _, err := res.c.Put(ctx, balanceKey, strconv.Itoa(initialBalance), 1, balanceScope); err != nil {
			return fmt.Errorf("set up %s resource: %w", res.name, err)
		}
	}
	r.rec.Step("resource", "setup", fmt.Sprintf("the balance is %d on every resource; A will deposit %d, B %d", initialBalance, depositA, depositB), 0)
	return nil
}

// op records a client operation on the timeline.
func (r *fencingRun) op(client, desc string, call time.Time, err error) {
	outcome := report.OutcomeOK
	if err != nil {
		outcome = report.OutcomeFail
		desc += ": " + shortErr(err)
	}
	r.rec.Op(client, desc, call, time.Now(), outcome)
}

// fencedRound: A takes the lock, reads and freezes; B takes over and
// deposits; A wakes and writes what it planned.
func (r *fencingRun) fencedRound(ctx context.Context) error {
	prefix := lock.WithPrefix(r.conn.Prefix + "/")
	// A is frozen: its session sends no keepalive after the grant (interval
	// an hour), as a process stopped by SIGSTOP or a long GC pause would not.
	mA, err := lock.New(r.cliA, "balance", prefix, lock.WithTTL(r.ttl),
		lock.WithSessionOptions(session.WithKeepAliveInterval(time.Hour)))
	if err != nil {
		return err
	}
	defer mA.Close()
	mB, err := lock.New(r.cliB, "balance", prefix, lock.WithTTL(r.ttl))
	if err != nil {
		return err
	}
	defer mB.Close()
	if err := r.aTakesAndFreezes(ctx, mA); err != nil {
		return err
	}
	if err := r.bTakesOver(ctx, mB); err != nil {
		return err
	}
	return r.aWakes(ctx)
}

func (r *fencingRun) aTakesAndFreezes(ctx context.Context, mA *lock.Mutex) error {
	r.env.Progressf("lock-without-fencing: A takes the lock and freezes (lease TTL %s, no keepalives)", r.ttl)
	r.rec.Heading("1. A takes the lock and reads the balance")
	r.rec.State("A", report.StateIdle)
	r.rec.State("B", report.StateIdle)
	t0 := time.Now()
	heldA, err := mA.Lock(ctx)
	if err != nil {
		return fmt.Errorf("lock by A: %w", err)
	}
	r.heldA, r.acquiredA = heldA, time.Now()
	tok := heldA.Token()
	r.rec.State("A", report.StateHolder)
	r.rec.Mark("A", fmt.Sprintf("A holds the lock, token %d", tok))
	r.op("A", "lock → token "+tok.String(), t0, nil)
	r.rec.Step("A", "acquired", fmt.Sprintf("holds the lock with fencing token %d (the create revision of its key), lease TTL %s", tok, r.ttl), uint64(tok))

	r.readsA = map[string]int{}
	for _, res := range r.resources {
		call := time.Now()
		e, err := res.c.Get(ctx, balanceKey)
		r.op("A", "read "+res.name+" balance", call, err)
		if err != nil {
			return err
		}
		r.readsA[res.name], _ = strconv.Atoi(e.Value)
	}
	r.rec.Step("A", "read", fmt.Sprintf("reads balance=%d and plans to write %d", r.readsA["fenced"], r.readsA["fenced"]+depositA), uint64(tok))

	r.rec.Heading("2. A freezes: a stop-the-world GC pause, a SIGSTOP, a VM migration")
	r.rec.State("A", report.StatePaused)
	r.rec.FaultStart("A frozen: no keepalives, no progress")
	r.rec.Step("A", "frozen", "stops running: no keepalives, no work", 0)
	return nil
}

func (r *fencingRun) bTakesOver(ctx context.Context, mB *lock.Mutex) error {
	r.env.Progressf("lock-without-fencing: B waits for the lock")
	r.rec.State("B", report.StateWaiting)
	r.rec.Step("B", "waiting", "asks for the same lock and waits behind A", 0)
	type acquired struct {
		held *lock.Held
		err  error
	}
	callB := time.Now()
	bDone := make(chan acquired, 1)
	go func() {
		h, err := mB.Lock(ctx)
		bDone <- acquired{h, err}
	}()
	// B gets the lock once A's lease expires on the server; A's session
	// may declare the loss before (at its local deadline).
	var b acquired
	select {
	case <-r.heldA.Lost():
		r.aLost = time.Now()
		r.rec.Step("coordkit", "lost", fmt.Sprintf("A's local deadline passed: A's lock is marked lost (%v) — a running A would stop here, a frozen one cannot notice", r.heldA.Err()), 0)
		b = <-bDone
	case b = <-bDone:
	}
	if b.err != nil {
		return fmt.Errorf("lock by B: %w", b.err)
	}
	r.heldB, r.acquiredB = b.held, time.Now()
	tok := b.held.Token()
	r.rec.State("B", report.StateHolder)
	r.rec.Mark("B", fmt.Sprintf("A's lease expired; B holds the lock, token %d", tok))
	r.op("B", "lock → token "+tok.String(), callB, nil)
	r.rec.Step("etcd", "expired", "A's lease expired on the server and its key was deleted", 0)
	r.rec.Step("B", "acquired", fmt.Sprintf("holds the lock with token %d, %s after A got it", tok, r.acquiredB.Sub(r.acquiredA).Round(time.Millisecond)), uint64(tok))

	r.writesB = map[string]error{}
	for _, res := range r.resources {
		call := time.Now()
		e, err := res.c.Get(ctx, balanceKey)
		r.op("B", "read "+res.name+" balance", call, err)
		if err != nil {
			return err
		}
		v, _ := strconv.Atoi(e.Value)
		call = time.Now()
		_, err = res.c.Put(ctx, balanceKey, strconv.Itoa(v+depositB), tok, balanceScope)
		r.op("B", fmt.Sprintf("write %s balance=%d (token %d)", res.name, v+depositB, tok), call, err)
		r.writesB[res.name] = err
	}
	r.rec.Step("B", "write", fmt.Sprintf("reads the balance and writes balance=%d with token %d: %s by the fenced resource, %s by the unfenced one",
		initialBalance+depositB, tok, verdictOf(r.writesB["fenced"]), verdictOf(r.writesB["unfenced"])), uint64(tok))
	if err := r.heldB.Unlock(ctx); err != nil {
		return fmt.Errorf("unlock by B: %w", err)
	}
	r.rec.State("B", report.StateIdle)
	return nil
}

func (r *fencingRun) aWakes(ctx context.Context) error {
	r.rec.Heading("3. A wakes up and finishes its write, unaware that it lost the lock")
	r.rec.FaultEnd("A frozen: no keepalives, no progress")
	r.rec.State("A", report.StateHolder)
	r.rec.Mark("A", "A wakes and writes")
	tok := r.heldA.Token()
	r.writesA = map[string]error{}
	for _, res := range r.resources {
		call := time.Now()
		_, err := res.c.Put(ctx, balanceKey, strconv.Itoa(r.readsA[res.name]+depositA), tok, balanceScope)
		r.op("A", fmt.Sprintf("late write %s balance=%d (token %d)", res.name, r.readsA[res.name]+depositA, tok), call, err)
		r.writesA[res.name] = err
	}
	_ = r.heldA.Unlock(ctx) // lost: it only cleans up
	r.rec.State("A", report.StateIdle)

	r.finals = map[string]int{}
	for _, res := range r.resources {
		e, err := res.c.Get(ctx, balanceKey)
		if err != nil {
			return err
		}
		r.finals[res.name], _ = strconv.Atoi(e.Value)
	}
	var stale *fencing.StaleError
	if errors.As(r.writesA["fenced"], &stale) {
		r.rec.Step("fenced", "rejected", fmt.Sprintf("409 stale fencing token: A's token %d < floor %d — B's deposit survives (balance %d)", stale.Token, stale.Floor, r.finals["fenced"]), uint64(tok))
	} else {
		r.rec.Step("fenced", "accepted", fmt.Sprintf("A's late write: %s (this must not happen)", verdictOf(r.writesA["fenced"])), uint64(tok))
	}
	if r.writesA["unfenced"] == nil {
		r.rec.Step("unfenced", "accepted", fmt.Sprintf("200 OK: the balance is now %d — B's deposit of %d is silently lost", r.finals["unfenced"], depositB), uint64(tok))
	} else {
		r.rec.Step("unfenced", "failed", "A's late write: "+verdictOf(r.writesA["unfenced"]), uint64(tok))
	}
	return nil
}

// redisRound plays the same pause with a Redis lock: SET NX with an
// expiry, on a real Redis (redsync) when Env.Redis is set, else modelled by
// a claim on an etcd lease that A does not renew. There is no token to send.
func (r *fencingRun) redisRound(ctx context.Context) error {
	kind := "a Redis-style lock (model)"
	if r.lease.real() {
		kind = "a real Redis lock (redsync on " + r.env.Redis + ")"
	}
	r.env.Progressf("lock-without-fencing: the same pause with %s: a lease, no token", kind)
	r.rec.Heading("4. The same pause with " + kind + ": a lease, and no token")
	r.rec.State("A", report.StateIdle)
	r.rec.Mark("", "Redis lock: a lease, no token")
	call := time.Now()
	err := r.lease.takeA(ctx)
	r.op("A", "SET NX PX (lock with an expiry)", call, err)
	if err != nil {
		return fmt.Errorf("redis lock by A: %w", err)
	}
	r.rec.State("A", report.StateHolder)
	r.rec.Step("A", "acquired", fmt.Sprintf("SET NX PX: holds the Redis lock for %s, with no token to show", r.ttl), 0)
	e, err := r.redis.Get(ctx, balanceKey)
	if err != nil {
		return err
	}
	r.redisReadA, _ = strconv.Atoi(e.Value)
	r.rec.State("A", report.StatePaused)
	r.rec.FaultStart("A frozen (Redis lock)")
	r.rec.Step("A", "frozen", fmt.Sprintf("reads balance=%d and freezes: it does not extend the lock", r.redisReadA), 0)
	r.rec.State("B", report.StateWaiting)
	callB := time.Now()
	if err := r.lease.waitB(ctx); err != nil {
		return fmt.Errorf("redis lock by B: %w", err)
	}
	r.redisWon = true
	r.redisWait = time.Since(callB)
	r.op("B", "SET NX PX (retried until A's key expired)", callB, nil)
	r.rec.State("B", report.StateHolder)
	r.rec.Step("B", "acquired", fmt.Sprintf("SET NX PX succeeds %s later, once A's key expired", r.redisWait.Round(time.Millisecond)), 0)
	e, err = r.redis.Get(ctx, balanceKey)
	if err != nil {
		return err
	}
	readB, _ := strconv.Atoi(e.Value)
	// With no token, both send the same constant: the resource cannot tell them apart.
	call = time.Now()
	_, r.redisErrB = r.redis.Put(ctx, balanceKey, strconv.Itoa(readB+depositB), 1, balanceScope)
	r.op("B", fmt.Sprintf("write balance=%d (no token)", readB+depositB), call, r.redisErrB)
	r.rec.Step("B", "write", fmt.Sprintf("writes balance=%d: %s", readB+depositB, verdictOf(r.redisErrB)), 0)
	if err := r.lease.releaseB(ctx); err != nil {
		return fmt.Errorf("redis unlock by B: %w", err)
	}
	r.rec.State("B", report.StateIdle)
	r.rec.FaultEnd("A frozen (Redis lock)")
	r.rec.State("A", report.StateHolder)
	call = time.Now()
	_, r.redisErrA = r.redis.Put(ctx, balanceKey, strconv.Itoa(r.redisReadA+depositA), 1, balanceScope)
	r.op("A", fmt.Sprintf("late write balance=%d (no token)", r.redisReadA+depositA), call, r.redisErrA)
	e, err = r.redis.Get(ctx, balanceKey)
	if err != nil {
		return err
	}
	r.redisFinal, _ = strconv.Atoi(e.Value)
	r.rec.Step("resource", "accepted", fmt.Sprintf("A wakes and writes balance=%d: %s — the resource cannot tell a former holder from the current one", r.redisReadA+depositA, verdictOf(r.redisErrA)), 0)
	call = time.Now()
	r.redisReleaseA = r.lease.releaseA(ctx)
	if r.lease.real() {
		r.op("A", "unlock", call, r.redisReleaseA)
		r.rec.Step("A", "released", "unlocks after its write; redsync answers: "+verdictOf(r.redisReleaseA)+" — the first sign A gets, after the damage", 0)
	}
	r.rec.State("A", report.StateIdle)
	return nil
}

// judge turns what the rounds observed into verdicts, metrics, a table,
// notes, the timeline and the story's closing explanation.
func (r *fencingRun) judge() {
	rep, tokA, tokB := r.rep, r.heldA.Token(), r.heldB.Token()
	waitB := r.acquiredB.Sub(r.acquiredA)
	rep.Metric("token_a", float64(tokA), "")
	rep.Metric("token_b", float64(tokB), "")
	rep.Metric("lease_ttl_ms", float64(r.ttl.Milliseconds()), "ms")
	rep.Metric("b_acquired_after_ms", cluster.Ms(waitB), "ms")
	if !r.aLost.IsZero() {
		rep.Metric("a_loss_signalled_after_ms", cluster.Ms(r.aLost.Sub(r.acquiredA)), "ms")
	}
	// A lower bound on B's wait (half a TTL) cannot fail on a loaded machine.
	check(rep, claimPausedHolderWrites,
		fmt.Sprintf("B acquires about one TTL (%s) after A, with a larger token; A's write is still sent", r.ttl),
		fmt.Sprintf("B acquired %s after A; tokens A=%d, B=%d; A's session declared the loss %s", waitB.Round(time.Millisecond), tokA, tokB, lossDesc(r.aLost, r.acquiredA, r.acquiredB)),
		tokB > tokA && waitB >= r.ttl/2)

	wantLost := r.readsA["unfenced"] + depositA
	check(rep, claimUnfencedLostUpdate,
		fmt.Sprintf("both writes accepted; final balance %d (A's stale %d+%d), B's +%d gone", wantLost, r.readsA["unfenced"], depositA, depositB),
		fmt.Sprintf("B's write %s, A's late write %s; final balance %d", verdictOf(r.writesB["unfenced"]), verdictOf(r.writesA["unfenced"]), r.finals["unfenced"]),
		r.writesB["unfenced"] == nil && r.writesA["unfenced"] == nil && r.finals["unfenced"] == wantLost)

	var stale *fencing.StaleError
	isStale := errors.As(r.writesA["fenced"], &stale)
	check(rep, claimFencedRejects,
		fmt.Sprintf("A's token %d < floor %d: rejected (409); final balance %d (B's)", tokA, tokB, initialBalance+depositB),
		fmt.Sprintf("B's write %s, A's late write %s; final balance %d", verdictOf(r.writesB["fenced"]), verdictOf(r.writesA["fenced"]), r.finals["fenced"]),
		r.writesB["fenced"] == nil && isStale && stale.Floor == tokB && r.finals["fenced"] == initialBalance+depositB)

	realRedis := 0.0
	if r.lease.real() {
		realRedis = 1
	}
	rep.Metric("redis_lock_real", realRedis, "")
	rep.Metric("redis_b_acquired_after_ms", cluster.Ms(r.redisWait), "ms")
	check(rep, claimRedisStyleTwoWriters,
		fmt.Sprintf("B gets the lease after A's expires; both writes land; final %d, B's +%d lost", r.redisReadA+depositA, depositB),
		fmt.Sprintf("with %s: B won the lease %s after asking; B's write %s, A's late write %s; final balance %d",
			r.lease.describe(), r.redisWait.Round(time.Millisecond), verdictOf(r.redisErrB), verdictOf(r.redisErrA), r.redisFinal),
		r.redisWon && r.redisErrA == nil && r.redisErrB == nil && r.redisFinal == r.redisReadA+depositA)

	serial := strconv.Itoa(initialBalance + depositA + depositB)
	redisRow := "Redis-style lock (model), unfenced"
	if r.lease.real() {
		redisRow = "Redis lock (redsync, real Redis), unfenced"
	}
	rep.AddTable(report.Table{
		Title:   "The balance on each resource (starts at 100; A deposits 50, B deposits 30)",
		Columns: []string{"resource", "A read", "B's write", "A's late write", "final", "correct if serial"},
		Rows: [][]string{
			{"unfenced", strconv.Itoa(r.readsA["unfenced"]), verdictOf(r.writesB["unfenced"]), verdictOf(r.writesA["unfenced"]), strconv.Itoa(r.finals["unfenced"]), serial},
			{"fenced (token checked)", strconv.Itoa(r.readsA["fenced"]), verdictOf(r.writesB["fenced"]), verdictOf(r.writesA["fenced"]), strconv.Itoa(r.finals["fenced"]), serial},
			{redisRow, strconv.Itoa(r.redisReadA), verdictOf(r.redisErrB), verdictOf(r.redisErrA), strconv.Itoa(r.redisFinal), serial},
		},
	})
	rep.Note("With fencing A's deposit is not silently applied over B's: A gets a 409 and must re-read and retry under a new lock. Without it the resource cannot tell a current holder from a former one.")
	rep.Note("The Redis round used %s.", r.lease.describe())
	rep.Note("A's session declared the loss at its local deadline (last keepalive sent + TTL - margin); a process that is frozen cannot act on that signal, which is why the resource must check the token.")

	r.rec.Heading("What happened")
	r.rec.Explain(fmt.Sprintf(`  The lock did its job: A and B never held it at the same time as far as etcd
  knows, and coordkit told A that it had lost the lock
  (%s). But A was frozen, so it could not listen.
  Any client can be paused between checking that it holds a lock and writing,
  so no lock alone can prevent this.
  Fencing can: every holder carries its token (A: %d, B: %d — they only grow),
  and the resource refuses a token lower than the highest it has seen.
  Fenced resource ends with balance %d; unfenced with %d; the %s,
  with no token to check, with %d. Serially it would be %s.
  Next: 'coordctl lock NAME -- CMD' gives any program a token in
  $COORD_FENCING_TOKEN; 'coordctl resource serve' is a resource that checks it.`,
		lossDesc(r.aLost, r.acquiredA, r.acquiredB), tokA, tokB, r.finals["fenced"], r.finals["unfenced"], redisLockName(r.lease), r.redisFinal, serial))
	rep.Timeline = r.rec.Timeline()
	rep.Steps = r.rec.Steps()
}

// redisLockName names the Redis round's lock in the closing explanation.
func redisLockName(l leaseLock) string {
	if l.real() {
		return "real Redis lock (redsync)"
	}
	return "Redis-style lock (model)"
}

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
