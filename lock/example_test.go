package lock_test

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/lock"
)

// exampleEndpoints are the client URLs of the package's embedded test etcd
// (started once, in lock_test.go); a program passes its own.
func exampleEndpoints() []string { return etcd.Endpoints() }

// Hold a lock while doing work, and stop the work the moment it is lost.
// The next holder's fencing token is larger: the protected resource admits
// it and rejects the late writes of any earlier holder.
func Example() {
	client, err := clientv3.New(clientv3.Config{Endpoints: exampleEndpoints()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	m, err := lock.New(client, "jobs/nightly", lock.WithTTL(10*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	held, err := m.Lock(ctx)
	if err != nil {
		fmt.Println(err) // context.DeadlineExceeded: not acquired in time
		return
	}
	// Bind the work to held.Context() and send held.Token() and
	// held.Scope() with each write to the protected resource (see package
	// fencing).
	select {
	case <-held.Lost():
		fmt.Println("lost:", held.Err())
	default:
		fmt.Println("holding", held.Name(), "scope", held.Scope(), "alive:", held.Alive())
	}
	first := held.Token()
	if err := held.Unlock(ctx); err != nil {
		fmt.Println(err)
		return
	}

	next, err := m.Lock(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer next.Unlock(context.Background())
	fmt.Println("next holder's token is larger:", next.Token() > first)
	// Output:
	// holding jobs/nightly scope jobs/nightly/ alive: true
	// next holder's token is larger: true
}

// Readers share a lock; a writer holds it alone.
func ExampleRWMutex() {
	client, err := clientv3.New(clientv3.Config{Endpoints: exampleEndpoints()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var readers []*lock.Held
	for range 2 {
		rw, err := lock.NewRWMutex(client, "config/routes")
		if err != nil {
			fmt.Println(err)
			return
		}
		defer rw.Close()
		r, err := rw.RLock(ctx) // shared with other readers
		if err != nil {
			fmt.Println(err)
			return
		}
		readers = append(readers, r)
	}
	fmt.Println("two readers at once:", readers[0].Alive() && readers[1].Alive(), readers[1].Shared())
	for _, r := range readers {
		_ = r.Unlock(ctx)
	}

	rw, err := lock.NewRWMutex(client, "config/routes")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rw.Close()
	w, err := rw.Lock(ctx) // alone; send w.Token() with each write
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Unlock(context.Background())
	fmt.Println("writer's token is above the readers':", w.Token() > readers[1].Token(), w.Shared())
	// Output:
	// two readers at once: true true
	// writer's token is above the readers': true false
}
