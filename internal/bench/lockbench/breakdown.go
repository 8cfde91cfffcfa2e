package lockbench

import (
	"context"
	"errors"
	"fmt"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/internal/primitive"
)

// The uncontended breakdown: what an uncontended lock+unlock costs for
// what it sends, with no library in between. Each step is a bare clientv3
// client sending one set of requests, and each adds one thing to the step
// before it: the second step sends exactly what coordkit's lock (on
// sessions of its own) sends for a hold shorter than
// primitive.LossWatchDelay (its acquire Txn and a plain delete; its loss
// watch never starts: the request counts of the run show it), the third
// adds the loss watch a longer hold opens, the last the compare-and-delete
// release of a lock on a shared session (lock.WithSession), so that
//
//	concurrency.Mutex - step 1  is concurrency's library,
//	step N - step N-1           is what that one addition costs,
//	coordkit - the second step  is coordkit's library.
//
// The steps run in the same uncontended step as the two libraries,
// alternating with them in blocks of rounds (see uncontended), on clients
// of their own.
type breakdownStep struct {
	key   string // the row, and the JSON "step"
	label string // what it sends, for the progress
	// compareDelete releases with a compare-and-delete of the key's create
	// revision (coordkit on a shared session, where another handle on the
	// lease could have made a newer key of the name) instead of a plain
	// delete.
	compareDelete bool
	// coordkitAcquire sends coordkit's acquire Txn instead of
	// concurrency.Mutex's: a compare that no key lives under the name,
	// whose branch is the put alone (what an uncontended lock applies);
	// the other branch the put with its previous value, a keys-only
	// first-created read and the N/limit read (a semaphore's name is
	// refused). The key's value is a nonce.
	coordkitAcquire bool
	// lossWatch watches the key for its deletion from the put until the
	// release (coordkit: a key deleted behind its holder's back is
	// reported at once), started without being waited for and cancelled
	// after the release, on a watch stream an idle anchor watch keeps open.
	lossWatch bool
}

// breakdownSteps, cumulative.
var breakdownSteps = []breakdownStep{
	{key: "bare_concurrency_requests", label: "concurrency.Mutex's requests (a Txn: put if absent + first-created read; a delete)"},
	{key: "plus_coordkit_acquire_txn", label: "+ coordkit's acquire Txn (the put alone when nothing is under the name; else the put, a keys-only read, the N/limit read)", coordkitAcquire: true},
	{key: "plus_loss_watch", label: "+ the loss watch (a hold longer than primitive.LossWatchDelay opens it)", coordkitAcquire: true, lossWatch: true},
	{key: "plus_compare_and_delete", label: "+ the release as a compare-and-delete Txn (a lock on a shared session)", compareDelete: true, coordkitAcquire: true, lossWatch: true},
}

// coordkitStep is the step that sends what coordkit's uncontended
// lock+unlock sends: its hold is shorter than the loss watch's delay, its
// sessions are its own.
const coordkitStep = 1

// BreakdownRow is one step of the uncontended breakdown, or one library.
type BreakdownRow struct {
	Step  string  `json:"step"`
	P50Ms float64 `json:"p50_ms"`
	// AddedMs is P50Ms less the step before it; for a library, less the
	// step that sends its requests.
	AddedMs float64 `json:"added_ms"`
	// The requests per lock+unlock, counted on the client's connection.
	KVRequestsPerOp    float64 `json:"kv_requests_per_op"`
	WatchRequestsPerOp float64 `json:"watch_requests_per_op"`
}

// The library rows of the breakdown, after the steps.
const (
	breakdownEtcd     = "concurrency_mutex_library"
	breakdownCoordkit = "coordkit_library"
)

// breakdownImpls are the steps as implementations uncontended can run.
func breakdownImpls() []impl {
	out := make([]impl, len(breakdownSteps))
	for i, st := range breakdownSteps {
		out[i] = impl{key: st.key, label: "breakdown step " + st.key, new: func(ctx context.Context, e *env, name string, _ bool) (bench.Locker, error) {
			return newBareLocker(ctx, e, name, st)
		}}
	}
	return out
}

// breakdownRows are the rows from the medians of the steps (in
// breakdownSteps' order) and of the two libraries, with their counts.
func breakdownRows(steps []float64, stepCounts []*opCounts, etcd, coordkit float64, etcdCounts, coordkitCounts *opCounts) []BreakdownRow {
	var rows []BreakdownRow
	add := func(step string, p50, before float64, c *opCounts) {
		r := BreakdownRow{Step: step, P50Ms: p50, AddedMs: p50 - before}
		if c != nil {
			r.KVRequestsPerOp, r.WatchRequestsPerOp = c.kv, c.watch
		}
		rows = append(rows, r)
	}
	for i, p50 := range steps {
		before := p50
		if i > 0 {
			before = steps[i-1]
		}
		add(breakdownSteps[i].key, p50, before, stepCounts[i])
	}
	add(breakdownEtcd, etcd, steps[0], etcdCounts)
	add(breakdownCoordkit, coordkit, steps[coordkitStep], coordkitCounts)
	return rows
}

// BreakdownTable is the breakdown as printed; ok is false without one.
func (r Result) BreakdownTable() (t bench.Table, ok bool) {
	if len(r.Breakdown) == 0 {
		return bench.Table{}, false
	}
	t = bench.Table{
		Title: "uncontended lock+unlock by what it sends, alternating with the libraries above: bare clientv3 steps, each adding one thing to the one before;\n" +
			"added_us of a library is its p50 less the step that sends its requests (" + breakdownSteps[0].key + " for concurrency.Mutex, " + breakdownSteps[coordkitStep].key + " for coordkit)",
		Columns: []string{"p50_us", "added_us", "kv_requests_per_op", "watch_requests_per_op"},
	}
	for _, row := range r.Breakdown {
		t.Add(row.Step, "", 1000*row.P50Ms, 1000*row.AddedMs, row.KVRequestsPerOp, row.WatchRequestsPerOp)
	}
	return t, true
}

// Printed is the result as coordctl bench lock prints it: the table, then
// the uncontended breakdown.
func (r Result) Printed() bench.Printed {
	p := bench.Printed{Result: r, Tables: []bench.Table{r.Table()}}
	if t, ok := r.BreakdownTable(); ok {
		p.Tables = append(p.Tables, t)
	}
	return p
}

// bareLocker sends one step's requests on a client of its own, on the
// lease of a concurrency.Session (which keeps it alive).
type bareLocker struct {
	c    *clientv3.Client
	s    *concurrency.Session
	step breakdownStep
	pfx  string
	key  string
	puts int // acquisitions so far, for the nonce

	rev        int64
	stopWatch  context.CancelFunc
	watches    sync.WaitGroup
	stopAnchor context.CancelFunc
}

// errNotUncontended: a bare step found a key ahead of its own, so the round
// did not measure an uncontended lock.
var errNotUncontended = errors.New("lockbench: breakdown: a key was ahead of ours")

func newBareLocker(ctx context.Context, e *env, name string, st breakdownStep) (*bareLocker, error) {
	c, err := e.client()
	if err != nil {
		return nil, err
	}
	s, err := concurrency.NewSession(c, concurrency.WithTTL(10), concurrency.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	l := &bareLocker{c: c, s: s, step: st, pfx: name + "/"}
	l.key = fmt.Sprintf("%s%x", l.pfx, int64(s.Lease()))
	if st.lossWatch {
		// As session.Keepaliver's anchor: the loss watches share a stream
		// that stays open between them.
		actx, cancel := context.WithCancel(clientv3.WithRequireLeader(context.WithoutCancel(ctx)))
		l.stopAnchor = cancel
		l.startWatch(actx, "\x00bench/lock/watch-anchor")
	}
	return l, nil
}

// startWatch watches key until ctx ends, from a goroutine of its own
// (clientv3's Watch call itself waits for the watch stream, so coordkit's
// Hold, too, makes it there).
func (l *bareLocker) startWatch(ctx context.Context, key string) {
	l.watches.Add(1)
	go func() {
		defer l.watches.Done()
		for range l.c.Watch(ctx, key, clientv3.WithCreatedNotify(), clientv3.WithFilterPut()) {
		}
	}()
}

func (l *bareLocker) Lock(ctx context.Context) error {
	acquire := l.acquireAsConcurrency
	if l.step.coordkitAcquire {
		acquire = l.acquireAsCoordkit
	}
	rev, err := acquire(ctx)
	if err != nil {
		return err
	}
	l.rev = rev
	if l.step.lossWatch {
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(context.WithoutCancel(ctx)))
		l.stopWatch = cancel
		l.startWatch(wctx, l.key)
	}
	return nil
}

// acquireAsConcurrency sends concurrency.Mutex's acquire Txn: put if
// absent, and the first-created key read back.
func (l *bareLocker) acquireAsConcurrency(ctx context.Context) (rev int64, err error) {
	first := clientv3.OpGet(l.pfx, clientv3.WithFirstCreate()...)
	resp, err := l.c.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(l.key), "=", 0)).
		Then(clientv3.OpPut(l.key, "", clientv3.WithLease(l.s.Lease())), first).
		Else(clientv3.OpGet(l.key), first).Commit()
	if err != nil {
		return 0, err
	}
	rev = resp.Header.Revision
	if !resp.Succeeded {
		rev = resp.Responses[0].GetResponseRange().Kvs[0].CreateRevision
	}
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) != 1 || kvs[0].CreateRevision != rev {
		return 0, fmt.Errorf("%w (%s)", errNotUncontended, l.key)
	}
	return rev, nil
}

// acquireAsCoordkit sends coordkit's acquire Txn (lock.Mutex's
// acquireOnce): the put alone when no key lives under the name; else the
// put with its previous value, a keys-only first-created read and the
// N/limit read.
func (l *bareLocker) acquireAsCoordkit(ctx context.Context) (rev int64, err error) {
	// A value of the shape of primitive.Lazy's Nonce (16 hex digits, a
	// dash, the acquisition's count): only its size matters here.
	l.puts++
	val := fmt.Sprintf("%016x-%d", int64(l.s.Lease()), l.puts)
	first := clientv3.OpGet(l.pfx, clientv3.WithRange(clientv3.GetPrefixRangeEnd(l.pfx)), clientv3.WithKeysOnly(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend), clientv3.WithLimit(1))
	limit := clientv3.OpGet(l.pfx+primitive.SemLimitSuffix, clientv3.WithKeysOnly())
	resp, err := l.c.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(l.pfx), "=", 0).WithPrefix()).
		Then(clientv3.OpPut(l.key, val, clientv3.WithLease(l.s.Lease()))).
		Else(clientv3.OpPut(l.key, val, clientv3.WithLease(l.s.Lease()), clientv3.WithPrevKV()), first, limit).Commit()
	if err != nil {
		return 0, err
	}
	if !resp.Succeeded {
		return 0, fmt.Errorf("%w (%s)", errNotUncontended, l.key)
	}
	return resp.Header.Revision, nil
}

func (l *bareLocker) Unlock(ctx context.Context) error {
	var err error
	if l.step.compareDelete {
		var resp *clientv3.TxnResponse
		resp, err = l.c.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(l.key), "=", l.rev)).Then(clientv3.OpDelete(l.key)).Commit()
		if err == nil && !resp.Succeeded {
			err = fmt.Errorf("lockbench: breakdown: %s was not ours at release", l.key)
		}
	} else {
		_, err = l.c.Delete(ctx, l.key)
	}
	// As coordkit's release: the watch is stopped after the delete, not
	// waited for.
	if l.stopWatch != nil {
		l.stopWatch()
		l.stopWatch = nil
	}
	return err
}

func (l *bareLocker) Close() {
	if l.stopWatch != nil {
		l.stopWatch()
	}
	if l.stopAnchor != nil {
		l.stopAnchor()
	}
	l.watches.Wait()
	_ = l.s.Close()
}

var _ bench.Locker = (*bareLocker)(nil)
