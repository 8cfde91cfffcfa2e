package election_test

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/fencing"
)

// A program written against client-go's leaderelection, ported
// (docs/migrating.md): LeaderElectionConfig's Lock becomes the Election,
// LeaseDuration its TTL, LockConfig.Identity the value proclaimed, and the
// callbacks keep their names. What the port gains: OnStartedLeading gets
// the Leadership, whose token goes with every write the resource fences;
// Run waits for OnStartedLeading before it resigns (ReleaseOnCancel), and
// returns when the leadership ends, as client-go's Run does.
func Example_fromClientGo() {
	client, err := clientv3.New(clientv3.Config{Endpoints: exampleEndpoints()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	// resourcelock.LeaseLock{Name: "scheduler", Namespace: "jobs"} and
	// LeaseDuration: 15 * time.Second.
	e, err := election.New(client, "jobs/scheduler", election.WithTTL(15*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seenSelf := make(chan struct{}) // (only to make the printed order fixed)
	work := func(ctx context.Context, token fencing.Token) {
		<-seenSelf
		fmt.Println("working with a fencing token:", token > 0)
		cancel() // a real leader works until ctx ends: lost, resigned or shut down
		<-ctx.Done()
	}
	err = election.Run(ctx, e, election.RunConfig{
		Value:           "scheduler-0", // LockConfig.Identity
		ReleaseOnCancel: true,
		OnStartedLeading: func(ctx context.Context, l *election.Leadership) {
			work(ctx, l.Token())
		},
		OnStoppedLeading: func() { fmt.Println("stopped leading") },
		OnNewLeader: func(value string, token fencing.Token) {
			fmt.Println("leader:", value)
			if value == "scheduler-0" {
				close(seenSelf)
			}
		},
		OnNoLeader: func() {}, // client-go calls OnNewLeader("") for this, sometimes
	})
	fmt.Println("Run returned:", err)
	// Output:
	// leader: scheduler-0
	// working with a fencing token: true
	// stopped leading
	// Run returned: <nil>
}
