package semaphore_test

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/semaphore"
)

// exampleEndpoints are the client URLs of the package's embedded test etcd
// (started once, in semaphore_test.go); a program passes its own.
func exampleEndpoints() []string { return etcd.Endpoints() }

// At most three encoders at once; each fences its writes by its slot's
// scope, so a slot's next holder fences out that slot's earlier one.
func Example() {
	client, err := clientv3.New(clientv3.Config{Endpoints: exampleEndpoints()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var held []*semaphore.Held
	for range 2 { // two encoders, each with its own handle
		s, err := semaphore.New(client, "jobs/encoders", 3, semaphore.WithLockDelay(5*time.Second))
		if err != nil {
			fmt.Println(err)
			return
		}
		defer s.Close()
		h, err := s.Acquire(ctx)
		if err != nil {
			fmt.Println(err) // context.DeadlineExceeded, or ErrLimitMismatch
			return
		}
		defer h.Release(context.Background())
		held = append(held, h)
	}
	// Send h.Token() and h.Scope() with each write to the protected
	// resource (see package fencing).
	for _, h := range held {
		select {
		case <-h.Lost():
			fmt.Println("lost:", h.Err())
		default:
			fmt.Println("slot", h.Slot(), "scope", h.Scope())
		}
	}
	fmt.Println("tokens increase:", held[1].Token() > held[0].Token())
	// Output:
	// slot 0 scope jobs/encoders#0
	// slot 1 scope jobs/encoders#1
	// tokens increase: true
}
