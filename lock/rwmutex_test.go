package lock_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	recipe "go.etcd.io/etcd/client/v3/experimental/recipes"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/lock"
	"github.com/coordkit/coordkit/session"
)

func newRW(t *testing.T, cli *clientv3.Client, name string, opts ...lock.Option) *lock.RWMutex {
	t.Helper()
	rw, err := lock.NewRWMutex(cli, name, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rw.Close() })
	return rw
}

func waitingRW(t *testing.T, cli *clientv3.Client, name string, opts ...lock.Option) (*lock.RWMutex, <-chan lock.Waiting) {
	ch := make(chan lock.Waiting, 16)
	opts = append(opts, lock.WithOnWait(func(w lock.Waiting) { ch <- w }))
	return newRW(t, cli, name, opts...), ch
}

// acquireAsync runs fn in a goroutine and delivers what it returns.
func acquireAsync(ctx context.Context, fn func(context.Context) (*lock.Held, error)) <-chan result {
	ch := make(chan result, 1)
	go func() {
		h, err := fn(ctx)
		ch <- result{h, err, time.Now()}
	}()
	return ch
}

type result struct {
	h   *lock.Held
	err error
	at  time.Time
}

func notYet(t *testing.T, ch <-chan result, what string) {
	t.Helper()
	etcdtest.NotYet(t, ch, what, 200*time.Millisecond)
}

// Readers and writers on many clients: a writer is never inside with anyone
// else, and readers do get in together.
func TestRWMutexReadersShareWriterExcludes(t *testing.T) {
	t.Parallel()
	srv, _ := etcd.StartWithClient(t)
	ctx := testCtx(t)
	var mu sync.Mutex
	var readers, writers, maxReaders int
	var violations []string
	const nReaders, nWriters, rounds = 4, 2, 4
	var wg sync.WaitGroup
	run := func(i int, write bool) {
		defer wg.Done()
		rw := newRW(t, srv.Client(t), "rw")
		for range rounds {
			var h *lock.Held
			var err error
			if write {
				h, err = rw.Lock(ctx)
			} else {
				h, err = rw.RLock(ctx)
			}
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			if write {
				if readers > 0 || writers > 0 {
					violations = append(violations, fmt.Sprintf("writer %d entered with %d readers, %d writers", i, readers, writers))
				}
				writers++
			} else {
				if writers > 0 {
					violations = append(violations, fmt.Sprintf("reader %d entered with a writer", i))
				}
				readers++
				maxReaders = max(maxReaders, readers)
			}
			mu.Unlock()
			// Give others time to (wrongly) enter; this is not a wait for an event.
			time.Sleep(20 * time.Millisecond)
			mu.Lock()
			if write {
				writers--
			} else {
				readers--
			}
			mu.Unlock()
			if err := h.Unlock(ctx); err != nil {
				t.Error(err)
			}
		}
	}
	for i := range nReaders {
		wg.Add(1)
		go run(i, false)
	}
	for i := range nWriters {
		wg.Add(1)
		go run(i, true)
	}
	wg.Wait()
	require.Empty(t, violations)
	t.Logf("at most %d readers inside at once", maxReaders)
}

// Readers share at once; a writer that arrives holds back readers that come
// after it (FIFO, no writer starvation); writer tokens grow.
func TestRWMutexFIFO(t *testing.T) {
	t.Parallel()
	srv, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	r1 := newRW(t, cli, "fifo-rw")
	r2 := newRW(t, srv.Client(t), "fifo-rw")
	w, wWaiting := waitingRW(t, srv.Client(t), "fifo-rw")
	r3, r3Waiting := waitingRW(t, srv.Client(t), "fifo-rw")

	h1, err := r1.RLock(ctx)
	require.NoError(t, err)
	h2, err := r2.TryRLock(ctx)
	require.NoError(t, err, "readers share")
	_, err = w.TryLock(ctx)
	require.ErrorIs(t, err, lock.ErrLocked)

	wGot := acquireAsync(ctx, w.Lock)
	recv(t, wWaiting, "writer waiting")
	_, err = r3.TryRLock(ctx)
	require.ErrorIs(t, err, lock.ErrLocked, "a reader behind a waiting writer must wait")
	r3Got := acquireAsync(ctx, r3.RLock)
	ww := recv(t, r3Waiting, "reader 3 waiting")
	require.Contains(t, ww.HolderKey, "/write/")
	require.True(t, h1.Shared())

	require.NoError(t, h1.Unlock(ctx))
	notYet(t, wGot, "writer (one reader still holds)")
	require.NoError(t, h2.Unlock(ctx))
	wr := recv(t, wGot, "writer")
	require.NoError(t, wr.err)
	require.EqualValues(t, createRevision(t, cli, wr.h.Key()), wr.h.Token())
	require.False(t, wr.h.Shared())
	notYet(t, r3Got, "reader 3 (writer holds)")
	require.NoError(t, wr.h.Unlock(ctx))
	rr := recv(t, r3Got, "reader 3")
	require.NoError(t, rr.err)
	require.Greater(t, rr.h.Token(), wr.h.Token())
	require.NoError(t, rr.h.Unlock(ctx))

	hw2, err := w.Lock(ctx)
	require.NoError(t, err)
	require.Greater(t, hw2.Token(), wr.h.Token(), "writer tokens grow")
	require.NoError(t, hw2.Unlock(ctx))
}

// etcd-io/etcd#16221: recipes.RWMutex let a writer whose lease was revoked
// while it waited go on as if it held the lock, beside the next writer.
// Here the revoked waiter gets ErrSessionExpired and there is never a
// second writer.
func TestRWMutexRevokedWaitingWriter(t *testing.T) {
	t.Parallel()
	srv, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	w1 := newRW(t, cli, "16221")
	w2, w2Waiting := waitingRW(t, srv.Client(t), "16221")
	w3, w3Waiting := waitingRW(t, srv.Client(t), "16221")
	h1, err := w1.Lock(ctx)
	require.NoError(t, err)
	got2 := acquireAsync(ctx, w2.Lock)
	waiting2 := recv(t, w2Waiting, "w2 waiting")
	got3 := acquireAsync(ctx, w3.Lock)
	recv(t, w3Waiting, "w3 waiting")

	resp, err := cli.Get(ctx, waiting2.Key)
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
	_, err = cli.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease))
	require.NoError(t, err)
	r2 := recv(t, got2, "w2 to fail")
	require.ErrorIs(t, r2.err, session.ErrGoneWhileWaiting)
	require.Nil(t, r2.h)
	notYet(t, got3, "w3 (w1 still holds)")
	require.True(t, h1.Alive())

	require.NoError(t, h1.Unlock(ctx))
	r3 := recv(t, got3, "w3")
	require.NoError(t, r3.err)
	st, err := primitive.ReadLock(ctx, cli, primitive.Config{Kind: primitive.KindLock, Name: "16221"})
	require.NoError(t, err)
	require.Len(t, st.Holders, 1)
	require.Equal(t, r3.h.Key(), st.Holders[0].Key)
	require.Empty(t, st.Waiters)
	require.NoError(t, r3.h.Unlock(ctx))
}

// A plain Mutex (and so concurrency.Mutex and etcdctl lock) on the name of
// an RWMutex is a writer for it.
func TestRWMutexMutexIsAWriter(t *testing.T) {
	t.Parallel()
	srv, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	rw := newRW(t, cli, "mixed")
	m := newMutex(t, srv.Client(t), "mixed")
	hr, err := rw.RLock(ctx)
	require.NoError(t, err)
	_, err = m.TryLock(ctx)
	require.ErrorIs(t, err, lock.ErrLocked)
	require.NoError(t, hr.Unlock(ctx))

	hm, err := m.Lock(ctx)
	require.NoError(t, err)
	_, err = rw.TryRLock(ctx)
	require.ErrorIs(t, err, lock.ErrLocked, "a reader must not share with a Mutex holder")
	_, err = rw.TryLock(ctx)
	require.ErrorIs(t, err, lock.ErrLocked)
	require.NoError(t, hm.Unlock(ctx))
}

// The key layouts are the same as etcd's recipes.RWMutex (name/read/...,
// name/write/...): the two exclude each other both ways.
func TestRWMutexInteropWithRecipe(t *testing.T) {
	t.Parallel()
	srv, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	es, err := concurrency.NewSession(srv.Client(t), concurrency.WithTTL(5))
	require.NoError(t, err)
	t.Cleanup(func() { _ = es.Close() })
	rw := newRW(t, cli, "recipe")

	t.Run("recipe writer holds", func(t *testing.T) {
		er := recipe.NewRWMutex(es, "recipe")
		require.NoError(t, er.Lock())
		_, err := rw.TryRLock(ctx)
		require.ErrorIs(t, err, lock.ErrLocked)
		_, err = rw.TryLock(ctx)
		require.ErrorIs(t, err, lock.ErrLocked)
		got := acquireAsync(ctx, rw.RLock)
		notYet(t, got, "RLock under the recipe's writer")
		require.NoError(t, er.Unlock())
		r := recv(t, got, "RLock")
		require.NoError(t, r.err)
		require.NoError(t, r.h.Unlock(ctx))
	})
	t.Run("recipe reader holds", func(t *testing.T) {
		er := recipe.NewRWMutex(es, "recipe")
		require.NoError(t, er.RLock())
		hr, err := rw.TryRLock(ctx)
		require.NoError(t, err, "readers share across implementations")
		require.NoError(t, hr.Unlock(ctx))
		_, err = rw.TryLock(ctx)
		require.ErrorIs(t, err, lock.ErrLocked)
		require.NoError(t, er.RUnlock())
	})
	t.Run("coordkit writer holds", func(t *testing.T) {
		hw, err := rw.Lock(ctx)
		require.NoError(t, err)
		er := recipe.NewRWMutex(es, "recipe")
		done := make(chan error, 1)
		go func() { done <- er.RLock() }()
		require.Eventually(t, func() bool { return len(keys(t, cli, "recipe/")) == 2 }, 5*time.Second, 5*time.Millisecond)
		select {
		case err := <-done:
			t.Fatalf("the recipe's reader got in beside a coordkit writer: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
		require.NoError(t, hw.Unlock(ctx))
		require.NoError(t, recv(t, done, "recipe RLock"))
		require.NoError(t, er.RUnlock())
	})
	t.Run("coordkit reader holds", func(t *testing.T) {
		hr, err := rw.RLock(ctx)
		require.NoError(t, err)
		er := recipe.NewRWMutex(es, "recipe")
		require.NoError(t, er.RLock(), "readers share across implementations")
		require.NoError(t, er.RUnlock())
		done := make(chan error, 1)
		go func() { done <- er.Lock() }()
		require.Eventually(t, func() bool { return len(keys(t, cli, "recipe/")) == 2 }, 5*time.Second, 5*time.Millisecond)
		select {
		case err := <-done:
			t.Fatalf("the recipe's writer got in beside a coordkit reader: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
		require.NoError(t, hr.Unlock(ctx))
		require.NoError(t, recv(t, done, "recipe Lock"))
		require.NoError(t, er.Unlock())
	})
}

// A release wakes one waiter: with a queue of writers, each unlock makes
// exactly one waiter look again.
func TestRWMutexNoHerd(t *testing.T) {
	t.Parallel()
	srv, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	var looks sync.Map // key -> *atomic.Int32
	traced := primitive.WithTrace(ctx, &primitive.Trace{OnLook: func(key string) {
		v, _ := looks.LoadOrStore(key, new(atomic.Int32))
		v.(*atomic.Int32).Add(1)
	}})
	holder := newRW(t, cli, "herd")
	h, err := holder.Lock(ctx)
	require.NoError(t, err)
	const n = 4
	gots := make([]<-chan result, n)
	for i := range n {
		w, waiting := waitingRW(t, srv.Client(t), "herd")
		gots[i] = acquireAsync(traced, w.Lock)
		recv(t, waiting, "waiter")
	}
	total := func() int {
		sum := 0
		looks.Range(func(_, v any) bool { sum += int(v.(*atomic.Int32).Load()); return true })
		return sum
	}
	require.Eventually(t, func() bool { return total() == n }, 5*time.Second, 5*time.Millisecond, "each waiter looks once to start")
	for i := range n {
		require.NoError(t, h.Unlock(ctx))
		r := recv(t, gots[i], "waiter in order")
		require.NoError(t, r.err)
		// Only the next waiter woke up and looked again.
		require.Equal(t, n+i+1, total(), "release %d woke more than one waiter", i)
		h = r.h
	}
	require.NoError(t, h.Unlock(ctx))
}

// NewReader is the read mode alone: its holds are shared readers' keys,
// shared with an RWMutex's readers and excluded by a plain Mutex holder.
func TestNewReaderIsTheReadMode(t *testing.T) {
	t.Parallel()
	srv, cli := etcd.StartWithClient(t)
	ctx := testCtx(t)
	r, err := lock.NewReader(srv.Client(t), "rd")
	require.NoError(t, err)
	defer r.Close()
	rw := newRW(t, cli, "rd")
	h, err := r.TryLock(ctx)
	require.NoError(t, err)
	require.True(t, h.Shared())
	require.Contains(t, h.Key(), "rd/read/")
	require.Equal(t, "rd", h.Name())
	hr, err := rw.TryRLock(ctx)
	require.NoError(t, err, "readers share")
	_, err = newMutex(t, srv.Client(t), "rd").TryLock(ctx)
	require.ErrorIs(t, err, lock.ErrLocked, "a writer waits for the readers")
	require.NoError(t, hr.Unlock(ctx))
	require.NoError(t, h.Unlock(ctx))
}
