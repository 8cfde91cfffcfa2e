package safety

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/internal/etcdembed"
	"github.com/coordkit/coordkit/internal/faultproxy"
	"github.com/coordkit/coordkit/session"
)

// Errors of Run.
var (
	// ErrBadConfig is returned for an invalid Config.
	ErrBadConfig = errors.New("safety: bad config")
)

// Scope is the lock or election name of a run, and the fencing scope of the
// locks that are not etcd's (redsync, PostgreSQL advisory locks); an etcd
// lock's or election's scope is its key prefix, Scope+"/" (Held.Scope).
const Scope = "safety"

// counterKey is the resource key the clients increment.
const counterKey = "counter"

// Config configures a Run.
type Config struct {
	Target Target
	// Policy, for TargetElection, makes the election coordinated: clients
	// with differing attributes, preemption, and leaderships that end by
	// ResignTo (handover.go). "" is a plain first-come election.
	Policy   election.Policy
	Duration time.Duration
	Clients  int
	TTL      time.Duration
	Seed     int64
	// Fencing makes the resource check tokens; false runs the same
	// workload and schedule against a resource that does not.
	Fencing bool
	// IfMatch (with Fencing false, HTTP resource) makes each write
	// conditional on the version its writer read: ModeIfMatch.
	IfMatch bool
	// NoFenceFirst makes holders skip the fence (POST /v1/fence) they
	// otherwise send before their first read: the window it closes, between
	// a new holder's grant and its first write, is then open.
	NoFenceFirst bool
	// Lock is the lock implementation; "" means LockCoordkit.
	Lock LockImpl
	// Kind is the kind of coordkit lock (TargetLock); "" means KindMutex.
	Kind Kind
	// Limit is the semaphore's limit (KindSemaphore); 0 means 2.
	Limit int
	// RedisAddr is the Redis server of LockRedsync (host:port).
	RedisAddr string
	// DialTimeout bounds the first contact with Redis or the SQL
	// database; 0 means 5s.
	DialTimeout time.Duration
	// Resource is the protected resource; "" means ResourceHTTP.
	Resource ResourceImpl
	// SQLDriver (sqlite, postgres or mysql) and SQLDSN name the database
	// of ResourceSQL; an empty DSN with sqlite means a file in DataDir.
	SQLDriver string
	SQLDSN    string
	// DataDir holds the cluster's and the resource's data; required.
	DataDir string
	// Coordctl is the path of a coordctl binary. When set, one extra client
	// runs as `coordctl lock NAME -- coordctl check rmw ...` processes (for
	// an election, `coordctl sidecar ... -- coordctl check rmw ...`) and
	// the nemesis SIGSTOPs them; with redsync, `coordctl check
	// redsync-lock ... -- coordctl check rmw ...`. When empty that fault is
	// left out. It applies only to mutexes and elections with the HTTP
	// resource (ProcessClients).
	Coordctl string
	// Python, with the process clients, makes them Python programs (the
	// path of python3) instead of `coordctl lock` processes: for coordkit's
	// mutex they hold it through the coordination API (clients/python's
	// coordkit.py on an agent the run serves on the cluster); with
	// LockRedsync they take redis-py's Lock on the same Redis key as the
	// in-process redsync clients (python3 must import redis). Only with
	// the HTTP resource.
	Python string
	// Kinds are the faults to apply; nil means all that apply.
	Kinds []FaultKind
	// Schedule, when not nil, is the fault schedule to apply instead of the
	// one the seed generates (a recorded one, to replay; a shrunk one).
	Schedule []Step
	// Progress receives one line per fault; nil discards.
	Progress io.Writer

	// onLateWrite, a test hook, is called when a holder's first write
	// after a freeze (or a process client's write after its SIGSTOP) is
	// accepted: overwrote says whether a later holder's write had been
	// accepted before it, so that (unfenced) an update is lost. A test
	// ends its run there instead of at a wall-clock time that a loaded
	// machine may not reach it in.
	onLateWrite func(overwrote bool)
	// onProcessWrite, a test hook, is called when a process client's write
	// is accepted, so that a test can end its run once one has written.
	onProcessWrite func()
}

func (c Config) lock() LockImpl {
	if c.Lock == "" {
		return LockCoordkit
	}
	return c.Lock
}

func (c Config) kind() Kind {
	if c.Kind == "" {
		return KindMutex
	}
	return c.Kind
}

// limit is how many holders the lock admits at once.
func (c Config) limit() int {
	switch {
	case c.kind() != KindSemaphore:
		return 1
	case c.Limit == 0:
		return 2
	}
	return c.Limit
}

func (c Config) resource() ResourceImpl {
	if c.Resource == "" {
		return ResourceHTTP
	}
	return c.Resource
}

// Mode is how the resource protects the counter.
func (c Config) Mode() Mode {
	switch {
	case c.Fencing:
		return ModeFenced
	case c.IfMatch:
		return ModeIfMatch
	}
	return ModeUnfenced
}

func (c Config) dialTimeout() time.Duration {
	if c.DialTimeout <= 0 {
		return 5 * time.Second
	}
	return c.DialTimeout
}

// ProcessClients reports whether the run has the process clients: a
// coordctl binary, a mutex (coordkit's or redsync) or an election, and the
// HTTP resource (their command, `coordctl check rmw`, speaks HTTP) — or the
// SQL resource with pg-advisory (`coordctl check sql-rmw`) or with Python
// clients on coordkit's mutex (rmw.py writes through fence_sql).
func (c Config) ProcessClients() bool {
	return c.Coordctl != "" && c.kind() == KindMutex &&
		(c.resource() == ResourceHTTP || c.lock() == LockPGAdvisory || c.pythonSQL())
}

// pythonSQL reports whether the Python process clients write to the SQL
// resource (through clients/python's fence_sql).
func (c Config) pythonSQL() bool {
	return c.Python != "" && c.lock() == LockCoordkit && c.resource() == ResourceSQL
}

// DefaultKinds are the faults that apply to cfg: for coordkit's locks the
// etcd cluster's and the clients' (clientFaults); for redsync only the
// clients'; for pg-advisory its own (pgKinds).
func (c Config) DefaultKinds() []FaultKind {
	switch c.lock() {
	case LockPGAdvisory:
		return c.pgKinds()
	case LockRedsync:
		return c.clientFaults()
	}
	return append([]FaultKind{FaultIsolateMember, FaultIsolateLeader, FaultCutClient, FaultStopMember}, c.clientFaults()...)
}

// clientFaults are the faults of the clients alone, those that apply to
// any lock: freeze-client; with the process clients sigstop-child; with
// Python clients kill-client.
func (c Config) clientFaults() []FaultKind {
	kinds := []FaultKind{FaultFreezeClient}
	if c.ProcessClients() {
		kinds = append(kinds, FaultSigstop)
	}
	if c.ProcessClients() && c.Python != "" {
		kinds = append(kinds, FaultKillClient)
	}
	return kinds
}

// Validate checks the config: every rule of a run is here, and coordctl
// check builds a Config from its flags and calls it. Errors are
// *ConfigError (matching ErrBadConfig).
func (c Config) Validate() error {
	switch {
	case c.Target != TargetLock && c.Target != TargetElection:
		return badConfig("target", "%q: want lock or election", c.Target)
	case c.Duration <= 0:
		return badConfig("duration", "%s: must be positive", c.Duration)
	case c.Clients < 2 || c.Clients > MaxClients:
		return badConfig("clients", "%d: want 2..%d", c.Clients, MaxClients)
	case session.CheckTTL(c.TTL) != nil:
		return badConfig("ttl", "%v", session.CheckTTL(c.TTL))
	case c.DataDir == "":
		return badConfig("data-dir", "required")
	case c.lock() != LockCoordkit && c.lock() != LockRedsync && c.lock() != LockPGAdvisory:
		return badConfig("lock", "%q: want coordkit, redsync or pg-advisory", c.Lock)
	case c.kind() != KindMutex && c.kind() != KindRWMutex && c.kind() != KindSemaphore:
		return badConfig("kind", "%q: want mutex, rwmutex or semaphore", c.Kind)
	case c.Target == TargetElection && (c.kind() != KindMutex || c.lock() != LockCoordkit):
		return badConfig("kind", "an election is coordkit's, of no kind")
	case c.Policy != "" && c.Target != TargetElection:
		return badConfig("policy", "a policy applies to an election")
	case c.Policy != "" && !validPolicy(c.Policy):
		return badConfig("policy", "invalid policy %q: want one of %v", c.Policy, election.Policies)
	case c.lock() == LockRedsync && c.kind() != KindMutex:
		return badConfig("kind", "%s: redsync is a mutex", c.Kind)
	case c.lock() == LockRedsync && c.RedisAddr == "":
		return badConfig("redis", "redsync needs a Redis address")
	case c.lock() == LockRedsync && c.Fencing:
		return badConfig("no-fencing", "redsync has no fencing token; run it unfenced or with If-Match")
	case c.Python != "" && (!c.ProcessClients() || c.Target != TargetLock || c.lock() == LockPGAdvisory || (c.resource() != ResourceHTTP && !c.pythonSQL())):
		return badConfig("python-clients", "Python process clients hold coordkit's mutex through the API (with the HTTP or the SQL resource) or, with --lock redsync, redis-py's Lock (with the HTTP resource)")
	case c.pythonSQL() && c.SQLDriver == "sqlite" && c.SQLDSN != "":
		return badConfig("dsn", "the Python clients open the run's own SQLite file; leave --dsn out")
	case c.kind() == KindSemaphore && (c.limit() < 1 || c.limit() >= c.Clients):
		return badConfig("limit", "%d: want 1..%d (fewer than the clients)", c.limit(), c.Clients-1)
	case c.IfMatch && c.Fencing:
		return badConfig("if-match", "If-Match replaces fencing; not both")
	case c.IfMatch && c.resource() != ResourceHTTP:
		return badConfig("resource", "%s: If-Match needs the HTTP resource", c.resource())
	case c.resource() != ResourceHTTP && c.resource() != ResourceSQL:
		return badConfig("resource", "%q: want http or sql", c.Resource)
	case c.resource() == ResourceSQL && c.SQLDriver != "sqlite" && c.SQLDriver != "postgres" && c.SQLDriver != "mysql":
		return badConfig("driver", "%q: want sqlite, postgres or mysql", c.SQLDriver)
	case c.resource() == ResourceSQL && c.SQLDriver != "sqlite" && c.SQLDSN == "":
		return badConfig("dsn", "the sql resource on %s needs a DSN", c.SQLDriver)
	}
	for _, k := range c.Kinds {
		switch {
		case !slices.Contains(knownFaults, k):
			return badConfig("faults", "unknown fault %q: want some of %v", k, knownFaults)
		case (k == FaultSigstop || k == FaultSigstopSupervisor || k == FaultKillClient) && !c.ProcessClients():
			return badConfig("faults", "%s needs the process clients (a coordctl mutex or election with the http resource)", k)
		case k == FaultSigstopSupervisor && c.Python != "":
			return badConfig("faults", "%s freezes coordctl alone, beside its command; a Python client is one process", k)
		}
	}
	return c.validatePG()
}

// MaxClients is the most in-process clients a run takes.
const MaxClients = 50

// ConfigError is what Validate returns: the Config field that is wrong,
// named as coordctl check spells its flag, and why. It matches ErrBadConfig.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("%v: %s: %s", ErrBadConfig, e.Field, e.Reason)
}
func (e *ConfigError) Unwrap() error { return ErrBadConfig }

// Usage is the error as coordctl check prints it: "invalid --FIELD: REASON".
func (e *ConfigError) Usage() string { return fmt.Sprintf("invalid --%s: %s", e.Field, e.Reason) }

func badConfig(field, format string, args ...any) error {
	return &ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Report is the outcome of a run: the checker's result and what was done.
type Report struct {
	Check              string          `json:"check"`
	Policy             election.Policy `json:"policy,omitempty"`
	Lock               LockImpl        `json:"lock"`
	Kind               Kind            `json:"kind"`
	Limit              int             `json:"limit"`
	Resource           ResourceImpl    `json:"resource"`
	Mode               Mode            `json:"mode"`
	Seed               int64           `json:"seed"`
	Fencing            bool            `json:"fencing"`
	FenceFirst         bool            `json:"fence_first"`
	DurationS          float64         `json:"duration_s"`
	Ops                int             `json:"ops"`
	Acquisitions       int             `json:"acquisitions"`
	Writes             int             `json:"writes"`
	FinalValue         int             `json:"final_value"`
	Faults             map[string]int  `json:"faults"`
	StaleRejected      int             `json:"stale_rejected"`
	Conflicts          int             `json:"conflicts,omitempty"`
	OverlappingHolders int             `json:"overlapping_holders"`
	LostUpdates        int             `json:"lost_updates"`
	MaxHolders         int             `json:"max_holders"`
	ReaderAcquisitions int             `json:"reader_acquisitions,omitempty"`
	MaxReaders         int             `json:"max_readers,omitempty"`
	Violations         int             `json:"violations"`
	Linearizable       bool            `json:"linearizable"`
	Passed             bool            `json:"passed"`
	// Handovers, with a policy, counts how the in-process leaderships ended.
	Handovers *HandoverCounts `json:"handovers,omitempty"`
	// Examples are the first few violations.
	Examples []Violation `json:"examples,omitempty"`
	// Effects say what each applied fault touched, in schedule order;
	// EffectiveFaults counts those that mattered (see Effect).
	Effects         []Effect `json:"effects,omitempty"`
	EffectiveFaults int      `json:"effective_faults"`
	// Schedule is the schedule as it ran: each step with the offset it
	// was applied at, for --schedule to replay.
	Schedule []Step `json:"schedule,omitempty"`
}

// FaultTotal is the number of faults applied.
func (r Report) FaultTotal() int {
	n := 0
	for _, v := range r.Faults {
		n += v
	}
	return n
}

// NewReport builds the report of a checked run. A fenced or If-Match run
// passes when the checker found nothing; an unfenced run passes when it
// completed (its counts are the finding).
func NewReport(cfg Config, elapsed time.Duration, faults map[string]int, r Result) Report {
	rep := Report{
		Check: string(cfg.Target) + "-safety", Lock: cfg.lock(), Kind: cfg.kind(), Limit: cfg.limit(), Resource: cfg.resource(),
		Mode: cfg.Mode(), Seed: cfg.Seed, Fencing: cfg.Fencing, FenceFirst: !cfg.NoFenceFirst && cfg.lock() != LockRedsync,
		DurationS: float64(elapsed.Round(10*time.Millisecond)) / float64(time.Second),
		Ops:       r.Ops, Acquisitions: r.Acquisitions, Writes: r.Writes, FinalValue: r.FinalValue,
		Faults: faults, StaleRejected: r.StaleRejected, Conflicts: r.Conflicts, OverlappingHolders: r.OverlappingHolders,
		LostUpdates: r.LostUpdates, MaxHolders: r.MaxHolders, ReaderAcquisitions: r.ReaderAcquisitions, MaxReaders: r.MaxReaders,
		Violations: len(r.Violations), Linearizable: r.Linearizable,
	}
	if cfg.Target == TargetElection {
		rep.Kind = ""
		rep.Policy = cfg.Policy
	}
	rep.Passed = cfg.Mode() == ModeUnfenced || (len(r.Violations) == 0 && r.Linearizable)
	if len(r.Violations) > 5 {
		rep.Examples = r.Violations[:5]
	} else if len(r.Violations) > 0 {
		rep.Examples = r.Violations
	}
	return rep
}

// Run starts what cfg tests (a three-member cluster with fault proxies, or
// a Redis client) and the protected resource, runs the clients and the
// nemesis for cfg.Duration, reads the resource's log and checks the
// history.
func Run(ctx context.Context, cfg Config) (Report, History, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, History{}, err
	}
	if err := ValidateSchedule(cfg.Schedule, cfg.Clients); err != nil {
		return Report{}, History{}, err
	}
	r := &run{cfg: cfg, faults: map[string]int{}, execSpans: map[string][2]int64{}}
	// The resource first: an unreachable database fails before a cluster
	// is started.
	switch cfg.resource() {
	case ResourceSQL:
		res, err := openSQLResource(ctx, cfg)
		if err != nil {
			return Report{}, History{}, err
		}
		r.res = res
	default:
		res, err := startHTTPResource(cfg.DataDir, cfg.Mode())
		if err != nil {
			return Report{}, History{}, err
		}
		r.res, r.resURL = res, res.URL()
	}
	defer r.res.Close()
	switch cfg.lock() {
	case LockRedsync:
		rl, err := dialRedsync(ctx, cfg.RedisAddr, cfg.dialTimeout(), cfg.TTL)
		if err != nil {
			return Report{}, History{}, err
		}
		defer rl.Close()
		r.locks, r.redsync = rl.lockFor, rl
	case LockPGAdvisory:
		pl, err := openPGLocks(ctx, cfg)
		if err != nil {
			return Report{}, History{}, err
		}
		defer pl.Close()
		r.locks, r.pg = pl.lockFor, pl
	default:
		cluster, err := etcdembed.StartCluster(ctx, etcdembed.ClusterConfig{
			DataDir: filepath.Join(cfg.DataDir, "etcd"), UnsafeNoFsync: true,
		})
		if err != nil {
			return Report{}, History{}, err
		}
		defer cluster.Close()
		r.cluster = cluster
		r.locks = coordkitLocks(cfg, &r.handovers)
	}
	if cfg.Python != "" && cfg.ProcessClients() {
		py, err := r.startPython(ctx)
		if err != nil {
			return Report{}, History{}, fmt.Errorf("safety: the Python clients: %w", err)
		}
		defer py.close()
		r.py = py
	}

	r.start = time.Now()

	for i := 1; i <= cfg.Clients; i++ {
		w, err := r.newWorker(i)
		if err != nil {
			r.closeWorkers()
			return Report{}, History{}, err
		}
		r.workers = append(r.workers, w)
	}
	defer r.closeWorkers()

	kinds := cfg.Kinds
	if kinds == nil {
		kinds = cfg.DefaultKinds()
	}
	members := 3
	if r.cluster != nil {
		members = r.cluster.Size()
	}
	steps := Schedule(cfg.Seed, kinds, members, cfg.Clients, cfg.TTL, cfg.Duration)
	if cfg.Schedule != nil {
		steps = cfg.Schedule
	}
	r.steps = steps

	// The nemesis works for cfg.Duration; the clients work until then and
	// until the holders it paused have made their late writes (drain).
	nctx, ncancel := context.WithTimeout(ctx, cfg.Duration)
	defer ncancel()
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	var wg sync.WaitGroup
	for _, w := range r.workers {
		wg.Add(1)
		go func() { defer wg.Done(); w.loop(wctx) }()
	}
	var execDone chan struct{}
	if cfg.ProcessClients() {
		execDone = make(chan struct{})
		go func() { defer close(execDone); r.execLoop(wctx) }()
	}
	r.nemesis(nctx, steps)
	r.drain(ctx)
	wcancel()
	wg.Wait()
	if execDone != nil {
		<-execDone
	}
	elapsed := time.Since(r.start)

	lctx, lcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer lcancel()
	writes, rejected, err := r.res.Log(lctx)
	if err != nil {
		return Report{}, History{}, fmt.Errorf("safety: read the resource's log: %w", err)
	}
	h := r.history(writes, rejected)
	result := Check(h)
	rep := NewReport(cfg, elapsed, r.faultCounts(), result)
	if cfg.Policy != "" {
		counts := r.handovers.snapshot()
		rep.Handovers = &counts
	}
	rep.Effects, rep.Schedule = r.effectsOf(h), r.ranSchedule()
	for _, e := range rep.Effects {
		if e.Effective {
			rep.EffectiveFaults++
		}
	}
	return rep, h, nil
}

// run is the state of one Run.
type run struct {
	cfg     Config
	cluster *etcdembed.Cluster // nil for a lock that does not use etcd
	locks   lockFactory
	res     Resource
	start   time.Time
	resURL  string // the HTTP resource's URL, for the process clients
	workers []*worker
	redsync *redsyncLocks // the redsync lock's Redis, if that is the lock
	pg      *pgLocks      // the advisory lock's database, if that is the lock
	py      *pyClients    // the Python process clients' program (and agent), if any
	holder  atomic.Int64  // the client holding the lock now, 0 if none known
	granted atomic.Uint64 // the largest token granted so far

	mu         sync.Mutex
	ops        []Op
	faults     map[string]int
	proc       *execProc           // the running `coordctl lock` client, if any
	stoppedPid int                 // the process client the nemesis last SIGSTOPped
	frozen     int                 // in-process holders frozen that have not written since
	execSpans  map[string][2]int64 // process client write id → its process's life
	handovers  handoverCounter     // with a policy: how leaderships ended
	steps      []Step              // the schedule the nemesis applies
	applied    []appliedStep       // what it did, in order (schedule.go)
}

func (r *run) now() int64 { return time.Since(r.start).Nanoseconds() }

// tokenless: the lock has no fencing token (redsync); its holders neither
// fence nor can be fenced.
func (r *run) tokenless() bool { return r.cfg.lock() == LockRedsync }

func (r *run) record(op Op) {
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

func (r *run) countFault(k FaultKind) {
	r.mu.Lock()
	r.faults[string(k)]++
	r.mu.Unlock()
}

func (r *run) faultCounts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, v := range r.faults {
		out[k] = v
	}
	return out
}

func (r *run) progressf(format string, args ...any) {
	if r.cfg.Progress == nil {
		return
	}
	// Under r.mu: the nemesis, the clients and the process clients write
	// progress, one line each.
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.cfg.Progress, "%6.1fs %7d ops  "+format+"\n", append([]any{time.Since(r.start).Seconds(), len(r.ops)}, args...)...)
}

// history assembles the recorded ops and the resource's log.
func (r *run) history(writes []Write, rejected int) History {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := History{Fenced: r.cfg.Fencing, IfMatch: r.cfg.IfMatch, Limit: r.cfg.limit(),
		Ops: append([]Op(nil), r.ops...), Writes: writes, Rejected: rejected, End: r.now()}
	r.execOpsFromLog(&h)
	sort.Slice(h.Ops, func(i, j int) bool { return h.Ops[i].Call < h.Ops[j].Call })
	return h
}

// worker is one in-process client: its own etcd client behind its own
// proxies (so a freeze can stop its keepalives alone), if the lock uses
// etcd, and its Lock.
type worker struct {
	r       *run
	id      int
	proxies []*faultproxy.Pausable
	cli     *clientv3.Client
	lk      Lock
	freeze  chan freezeOrder
	seq     int
	rng     *rand.Rand
}

func (r *run) newWorker(id int) (*worker, error) {
	w := &worker{r: r, id: id, freeze: make(chan freezeOrder, 1),
		rng: rand.New(rand.NewPCG(uint64(r.cfg.Seed), uint64(id)))}
	if r.cluster == nil {
		lk, err := r.locks(nil, id)
		if err != nil {
			return nil, err
		}
		w.lk = lk
		return w, nil
	}
	var eps []string
	for _, target := range r.cluster.Endpoints() {
		to, err := url.Parse(target)
		if err != nil {
			w.close()
			return nil, err
		}
		p, err := faultproxy.NewPausable("127.0.0.1:0", to.Host)
		if err != nil {
			w.close()
			return nil, err
		}
		w.proxies = append(w.proxies, p)
		eps = append(eps, p.URL())
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: eps, DialTimeout: 2 * time.Second, Logger: zap.NewNop(),
		DialKeepAliveTime: time.Second, DialKeepAliveTimeout: time.Second,
	})
	if err != nil {
		w.close()
		return nil, err
	}
	w.cli = cli
	if w.lk, err = r.locks(cli, id); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

func (w *worker) close() {
	if w.lk != nil {
		_ = w.lk.Close()
	}
	if w.cli != nil {
		_ = w.cli.Close()
	}
	for _, p := range w.proxies {
		p.Close()
	}
}

func (r *run) closeWorkers() {
	for _, w := range r.workers {
		w.close()
	}
	r.workers = nil
}

func (w *worker) pause(on bool) {
	for _, p := range w.proxies {
		p.Pause(on)
	}
}

// writesPerTenure is how many increments a holder makes before releasing.
const writesPerTenure = 3

func (w *worker) loop(ctx context.Context) {
	for ctx.Err() == nil {
		t := w.acquire(ctx)
		if t == nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(50+w.rng.IntN(100)) * time.Millisecond):
			}
			continue
		}
		if t.Reader() {
			w.read(ctx, t)
		} else {
			w.r.holder.Store(int64(w.id))
			w.hold(ctx, t)
			w.r.holder.CompareAndSwap(int64(w.id), 0)
		}
		w.release(t)
		// Think time, so that waiters queue up behind each other.
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(w.rng.IntN(30)) * time.Millisecond):
		}
	}
}

// release unlocks t, retrying while the cluster cannot answer: a Mutex
// holds one lock at a time, and a lock whose Unlock failed stays held (its
// session keeps the key alive) until an Unlock succeeds or the lock is
// lost. If that takes too long, the client starts over with a new Mutex
// (closing the old one revokes its session, or lets its lease expire).
func (w *worker) release(t Tenure) {
	op := Op{Client: w.id, Kind: OpRelease, Token: uint64(t.Token()), Slot: t.Slot(), Reader: t.Reader(), Call: w.r.now(), Outcome: Fail}
	defer func() {
		op.Return = w.r.now()
		w.r.record(op)
	}()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		rctx, cancel := context.WithTimeout(clientv3.WithRequireLeader(context.Background()), 2*time.Second)
		err := t.Release(rctx)
		cancel()
		if err == nil {
			op.Outcome = OK
			return
		}
		if errors.Is(err, session.ErrNotHeld) || errors.Is(err, election.ErrNotLeader) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	w.r.progressf("client %d: unlock failed for 10s; starting over with a new lock handle", w.id)
	_ = w.lk.Close()
	if lk, err := w.r.locks(w.cli, w.id); err == nil {
		w.lk = lk
	}
}

func (w *worker) acquire(ctx context.Context) Tenure {
	// A member cut off from the leader keeps answering reads and keeps
	// watches open without events; requiring a leader makes it refuse, and
	// etcd's client then tries another member, as a careful client does.
	actx, cancel := context.WithTimeout(clientv3.WithRequireLeader(ctx), lockTimeout)
	defer cancel()
	op := Op{Client: w.id, Kind: OpAcquire, Call: w.r.now()}
	t, err := w.lk.Acquire(actx)
	op.Return = w.r.now()
	if err != nil {
		op.Outcome = Fail
		w.r.record(op)
		return nil
	}
	op.Token, op.Slot, op.Reader, op.Outcome = uint64(t.Token()), t.Slot(), t.Reader(), OK
	w.r.record(op)
	if t.Reader() {
		return t
	}
	for {
		g := w.r.granted.Load()
		if g >= uint64(t.Token()) || w.r.granted.CompareAndSwap(g, uint64(t.Token())) {
			break
		}
	}
	return t
}

func (w *worker) hold(ctx context.Context, t Tenure) {
	res := w.r.res
	tok, scope, slot := uint64(t.Token()), t.Scope(), t.Slot()
	opctx := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 2*time.Second) }

	// Fence first: from here on no older holder's write is admitted, so the
	// read below sees every write that will ever count before ours. A
	// token-less lock has nothing to fence with.
	if !w.r.cfg.NoFenceFirst && !w.r.tokenless() {
		op := Op{Client: w.id, Kind: OpFence, Token: tok, Slot: slot, Call: w.r.now()}
		c, cancel := opctx()
		err := res.Fence(c, scope, tok)
		cancel()
		op.Return, op.Outcome = w.r.now(), res.Outcome(err)
		w.r.record(op)
		if err != nil {
			return
		}
	}
	for range writesPerTenure {
		if ctx.Err() != nil || !t.Alive() {
			return
		}
		op := Op{Client: w.id, Kind: OpRead, Token: tok, Slot: slot, Call: w.r.now()}
		c, cancel := opctx()
		v, version, err := res.Read(c, slot)
		cancel()
		op.Return, op.Value, op.Outcome = w.r.now(), v, res.Outcome(err)
		w.r.record(op)
		if op.Outcome != OK {
			return
		}
		frozen := w.freezePoint(ctx, tok)

		w.seq++
		id := fmt.Sprintf("c%d-%d", w.id, w.seq)
		wop := Op{Client: w.id, Kind: OpWrite, Token: tok, Slot: slot, Value: v + 1, ID: id, Call: w.r.now()}
		c, cancel = opctx()
		err = res.Write(c, slot, v+1, id, tok, scope, version)
		cancel()
		wop.Return, wop.Outcome = w.r.now(), res.Outcome(err)
		w.r.record(wop)
		if frozen >= 0 {
			w.r.mu.Lock()
			w.r.frozen--
			w.r.mu.Unlock()
			w.r.lateWrite(frozen, wop)
			if hook := w.r.cfg.onLateWrite; hook != nil && wop.Outcome == OK {
				hook(w.r.writtenBefore(wop))
			}
		}
		if err != nil {
			return
		}
	}
}

// read is a read holding of a read-write lock: it reads the counter a few
// times, a moment apart, so that readers overlap.
func (w *worker) read(ctx context.Context, t Tenure) {
	for range writesPerTenure {
		if ctx.Err() != nil || !t.Alive() {
			return
		}
		op := Op{Client: w.id, Kind: OpRead, Token: uint64(t.Token()), Reader: true, Call: w.r.now()}
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		v, _, err := w.r.res.Read(c, t.Slot())
		cancel()
		op.Return, op.Value, op.Outcome = w.r.now(), v, w.r.res.Outcome(err)
		w.r.record(op)
		if op.Outcome != OK {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(20+w.rng.IntN(30)) * time.Millisecond):
		}
	}
}

// freezePoint is where the nemesis freezes a holder: after it read the
// counter and before it writes, the worst moment. Its keepalives stop too.
// The freeze lasts its duration and then until a later holder has been
// granted the lock (at most supersedeWait more): a pause that outlives the
// lease but not the cluster's next grant tests nothing, and after some
// faults the cluster takes seconds to grant again.
//
// It returns the index of the applied step that froze it, or -1.
func (w *worker) freezePoint(ctx context.Context, token uint64) int {
	if w.cutPoint(ctx, token) {
		return -1
	}
	select {
	case order := <-w.freeze:
		d := order.hold
		w.r.countFault(FaultFreezeClient)
		w.r.mu.Lock()
		w.r.frozen++
		w.r.mu.Unlock()
		w.r.frozeHolder(order.step, w.id, token)
		w.r.progressf("freeze client %d for %s (holding token %d)", w.id, d.Round(time.Millisecond), token)
		w.pause(true)
		select {
		case <-ctx.Done():
		case <-time.After(d):
			poll := time.NewTicker(20 * time.Millisecond)
			deadline := time.After(supersedeWait)
		wait:
			for w.r.granted.Load() <= token {
				select {
				case <-ctx.Done():
					break wait
				case <-deadline:
					break wait
				case <-poll.C:
				}
			}
			poll.Stop()
		}
		w.pause(false)
		w.r.thawed(order.step, w.r.granted.Load() > token)
		return order.step
	default:
	}
	return -1
}

// supersedeWait bounds how long a freeze waits, after its duration, for a
// later holder to be granted.
const supersedeWait = 10 * time.Second

// drainWait bounds how long a run goes on after cfg.Duration for the
// holders the nemesis paused to make their late writes: a freeze's wait
// for a later grant, and a little more for the write itself.
const drainWait = supersedeWait + 5*time.Second

// drain ends the run on events, not on the clock: after the nemesis has
// stopped (and healed the cluster), it drops the freezes no client has
// reached yet and waits, at most drainWait, until every holder it froze has
// sent its late write and every process client it stopped has exited.
// Those late writes are what the run is about; a run that ended at
// cfg.Duration sharp would lose the ones of faults applied near its end.
func (r *run) drain(ctx context.Context) {
	for _, w := range r.workers {
		select {
		case <-w.freeze:
		default:
		}
	}
	deadline := time.NewTimer(drainWait)
	defer deadline.Stop()
	poll := time.NewTicker(20 * time.Millisecond)
	defer poll.Stop()
	for r.pausedHolders() {
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			r.progressf("a paused holder had not written %s after the run's end; stopped waiting", drainWait)
			return
		case <-poll.C:
		}
	}
}

// pausedHolders reports whether a holder the nemesis paused has yet to make
// its late write: an in-process client frozen or thawing, or the stopped
// process client still running.
func (r *run) pausedHolders() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.frozen > 0 || (r.proc != nil && r.proc.pid == r.stoppedPid)
}

// nemesis applies the schedule until ctx is done, then heals everything
// and restarts stopped members.
func (r *run) nemesis(ctx context.Context, steps []Step) {
	defer r.healAll()
	select {
	case <-ctx.Done():
		return
	case <-time.After(time.Second):
	}
	for i, s := range steps {
		if ctx.Err() != nil {
			return
		}
		if s.At > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(r.start.Add(s.At))):
			}
		}
		r.stepStarts(i, s)
		undo := r.apply(ctx, i, s)
		select {
		case <-ctx.Done():
		case <-time.After(s.Hold):
		}
		undo()
		r.stepEnds(i)
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.Quiet):
		}
	}
	<-ctx.Done()
}

func (r *run) healAll() {
	if r.cluster == nil {
		return
	}
	r.cluster.Heal()
	for i := 1; i <= r.cluster.Size(); i++ {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := r.cluster.StartMember(sctx, i); err == nil {
			r.progressf("restarted member %d", i)
		}
		cancel()
	}
}

// apply applies one step and returns what undoes it.
func (r *run) apply(ctx context.Context, i int, s Step) (undo func()) {
	heal := func() { r.cluster.Heal() }
	if r.cluster == nil && s.Kind != FaultFreezeClient && s.Kind != FaultSigstop && s.Kind != FaultSigstopSupervisor && s.Kind != FaultCutLock && s.Kind != FaultKillClient {
		r.progressf("%s: no etcd cluster in this run, skipped", s.Kind)
		return func() {}
	}
	switch s.Kind {
	case FaultIsolateMember:
		if r.cluster.Isolate(s.Member) == nil {
			r.countFault(s.Kind)
			r.touched(i, fmt.Sprintf("member %d", s.Member))
			r.progressf("isolate member %d for %s", s.Member, s.Hold.Round(time.Millisecond))
		}
		return heal
	case FaultIsolateLeader:
		l := r.cluster.Leader()
		if l == 0 {
			r.progressf("isolate-leader: no leader now, skipped")
			return func() {}
		}
		if r.cluster.Isolate(l) == nil {
			r.countFault(s.Kind)
			r.touched(i, fmt.Sprintf("member %d (the leader)", l))
			r.progressf("isolate leader (member %d) for %s", l, s.Hold.Round(time.Millisecond))
		}
		return heal
	case FaultCutClient:
		if r.cluster.BlackholeClient(s.Member) == nil {
			r.countFault(s.Kind)
			r.touched(i, fmt.Sprintf("the client link of member %d", s.Member))
			r.progressf("cut the client link of member %d for %s", s.Member, s.Hold.Round(time.Millisecond))
		}
		return heal
	case FaultStopMember:
		if r.cluster.StopMember(s.Member) != nil {
			return func() {}
		}
		r.countFault(s.Kind)
		r.touched(i, fmt.Sprintf("member %d", s.Member))
		r.progressf("stop member %d for %s", s.Member, s.Hold.Round(time.Millisecond))
		return func() {
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := r.cluster.StartMember(sctx, s.Member)
			r.progressf("restart member %d: %v", s.Member, errOrOK(err))
		}
	case FaultFreezeClient:
		c := int(r.holder.Load())
		if c == 0 {
			c = s.Client
		}
		if r.cfg.kind() == KindRWMutex && isReader(c) {
			c-- // readers never reach the freeze point; their writer neighbour does
		}
		w := r.workers[c-1]
		select {
		case w.freeze <- freezeOrder{hold: s.Hold, step: i}:
			r.touched(i, fmt.Sprintf("client %d", c))
		default:
		}
		// A freeze the client has not reached yet stays pending: when
		// faults stall the workload, the next tenure of that client
		// freezes instead.
		return func() {}
	case FaultSigstop, FaultSigstopSupervisor, FaultKillClient:
		return r.sigstop(ctx, i, s)
	case FaultCutLock:
		return r.cutLock(s)
	}
	return func() {}
}

func errOrOK(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}
