package lock_test

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/lock"
)

// Hold a lock while doing work, and stop the work the moment it is lost.
func Example() {
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}})
	if err != nil {
		return
	}
	defer client.Close()
	m, err := lock.New(client, "jobs/nightly", lock.WithTTL(10*time.Second))
	if err != nil {
		return
	}
	defer m.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	held, err := m.Lock(ctx)
	if err != nil {
		return // context.DeadlineExceeded: not acquired in time
	}
	defer held.Unlock(context.Background())

	// Bind the work to held.Context() and send held.Token() with each write
	// to the protected resource (see package fencing).
	select {
	case <-held.Lost():
		fmt.Println("lost:", held.Err())
	case <-time.After(time.Second):
		fmt.Println("done with token", held.Token())
	}
}

// Readers share a lock; a writer holds it alone.
func ExampleRWMutex() {
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}})
	if err != nil {
		return
	}
	defer client.Close()
	rw, err := lock.NewRWMutex(client, "config/routes")
	if err != nil {
		return
	}
	defer rw.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	r, err := rw.RLock(ctx) // shared with other readers
	if err != nil {
		return
	}
	_ = r.Unlock(ctx)

	w, err := rw.Lock(ctx) // alone; send w.Token() with each write
	if err != nil {
		return
	}
	defer w.Unlock(context.Background())
	fmt.Println("writer token", w.Token())
}
