package semaphore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/coordkit/coordkit/semaphore"
)

// At most three encoders at once; each fences its writes by its slot's
// scope, so a slot's next holder fences out that slot's earlier one. The
// encoders are goroutines sharing one Semaphore: each Acquire is a holder
// of its own.
func Example() {
	client, err := etcd.ExampleClient() // clientv3.New(clientv3.Config{Endpoints: ...})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	s, err := semaphore.New(client, "jobs/encoders", 3, semaphore.WithLockDelay(5*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	slots := make(chan *semaphore.Held)
	for range 2 { // two encoders at once, through the one handle
		go func() {
			h, err := s.Acquire(ctx)
			if err != nil {
				fmt.Println(err) // context.DeadlineExceeded, or ErrLimitMismatch
				close(slots)
				return
			}
			slots <- h
		}()
	}
	var held []*semaphore.Held
	for range 2 {
		h, ok := <-slots
		if !ok {
			return
		}
		defer h.Release(context.Background())
		held = append(held, h)
	}
	// Send h.Token() and h.Scope() with each write to the protected
	// resource (see package fencing).
	fmt.Println("two slots at once:", held[0].Slot() != held[1].Slot(), held[0].Alive() && held[1].Alive())
	fmt.Println("scopes are the slots':", held[0].Scope() == fmt.Sprintf("jobs/encoders/slots/%d", held[0].Slot()))
	fmt.Println("tokens differ:", held[0].Token() != held[1].Token())
	// Output:
	// two slots at once: true true
	// scopes are the slots': true
	// tokens differ: true
}
