package lock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/lock"
	"github.com/coordkit/coordkit/session"
)

// A program written against etcd's concurrency package, ported
// (docs/migrating.md): concurrency.NewMutex(s, P) keeps its keys under
// P+"/", and so does a coordkit lock whose prefix+name is P. Until every
// process is ported, the old and the new exclude each other on the same
// keys. P "/jobs/nightly" is the name "jobs/nightly" under the prefix "/";
// a name that starts or ends with "/" is refused, because etcd's
// NewMutex(s, "/jobs/nightly/") keeps its keys under "/jobs/nightly//",
// which is rarely what its author meant.
func Example_fromConcurrency() {
	client, err := clientv3.New(clientv3.Config{Endpoints: exampleEndpoints()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// The process not yet ported holds the lock, as it always did.
	s, err := concurrency.NewSession(client, concurrency.WithTTL(10))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	old := concurrency.NewMutex(s, "/jobs/nightly")
	if err := old.Lock(ctx); err != nil {
		fmt.Println(err)
		return
	}

	// The ported process: session.New for concurrency.NewSession (the lock
	// can also create its own), lock.New for concurrency.NewMutex.
	sess, err := session.New(ctx, client, session.WithTTL(10*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sess.Close()
	m, err := lock.New(client, "jobs/nightly", lock.WithPrefix("/"), lock.WithSession(sess))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	_, err = m.TryLock(ctx)
	fmt.Println("held by the old process:", errors.Is(err, lock.ErrLocked))

	if err := old.Unlock(ctx); err != nil {
		fmt.Println(err)
		return
	}
	held, err := m.Lock(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("then ours, key under /jobs/nightly/:", held.Key()[:len("/jobs/nightly/")] == "/jobs/nightly/")
	// concurrency.Mutex.Header().Revision is not a fencing token on the
	// contended path; held.Token() is (the key's create revision).
	fmt.Println("token is the key's create revision:", held.Token() > 0)
	if err := held.Unlock(ctx); err != nil {
		fmt.Println(err)
	}

	_, err = lock.New(client, "/jobs/nightly/")
	fmt.Println("trailing slash refused:", errors.Is(err, session.ErrInvalidName))
	// Output:
	// held by the old process: true
	// then ours, key under /jobs/nightly/: true
	// token is the key's create revision: true
	// trailing slash refused: true
}

// The README's library snippet, as a function: errors handled, the work
// bound to the lock, and a release that outlives a cancelled context.
func Example_fencedWrite() {
	client, err := clientv3.New(clientv3.Config{Endpoints: exampleEndpoints()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	dir, err := os.MkdirTemp("", "coordkit-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	res, err := fencing.StartLocal(fencing.ResourceConfig{DataDir: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer res.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := writeReport(ctx, client, &fencing.Client{BaseURL: res.URL}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("written under the lock")
	// Output:
	// written under the lock
}

func writeReport(ctx context.Context, etcdClient *clientv3.Client, res *fencing.Client) error {
	m, err := lock.New(etcdClient, "jobs/report", lock.WithTTL(10*time.Second))
	if err != nil {
		return err // a name or TTL the library refuses: session.ErrInvalidName, session.ErrBadTTL
	}
	defer m.Close()
	held, err := m.Lock(ctx)
	if err != nil {
		return err // ctx ended before the lock was ours, or etcd failed
	}
	defer func() {
		// Release with a context of its own: an Unlock cancelled with ctx
		// would leave the key to expire with the lease (the TTL).
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := held.Unlock(uctx); err != nil && !errors.Is(err, session.ErrNotHeld) {
			log.Printf("unlock: %v", err)
		}
	}()
	// held.Context() ends when the lock is lost (held.Lost() closes before
	// etcd can hand the lock to anyone else); the token goes with every
	// write, and the resource refuses it once a later holder wrote.
	_, err = res.Put(held.Context(), "report", "done", held.Token(), held.Scope())
	return err
}
