package semaphore_test

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/semaphore"
)

// At most three encoders at once; each fences its writes by its slot's scope.
func Example() {
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}})
	if err != nil {
		return
	}
	defer client.Close()
	s, err := semaphore.New(client, "jobs/encoders", 3, semaphore.WithLockDelay(5*time.Second))
	if err != nil {
		return
	}
	defer s.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	held, err := s.Acquire(ctx)
	if err != nil {
		return // context.DeadlineExceeded, or ErrLimitMismatch
	}
	defer held.Release(context.Background())

	// Send held.Token() and held.Scope() ("jobs/encoders#i") with each write
	// to the protected resource (see package fencing).
	select {
	case <-held.Lost():
		fmt.Println("lost:", held.Err())
	case <-time.After(time.Second):
		fmt.Println("slot", held.Slot(), "token", held.Token(), "scope", held.Scope())
	}
}
