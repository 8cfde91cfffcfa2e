package election_test

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/fencing"
)

// Campaign, act with the fencing token while leading, resign.
func ExampleElection_Campaign() {
	var client *clientv3.Client // connected elsewhere
	e, err := election.New(client, "scheduler", election.WithTTL(5*time.Second))
	if err != nil {
		return
	}
	defer e.Close()
	ctx := context.Background()
	l, err := e.Campaign(ctx, "node-1")
	if err != nil {
		return
	}
	defer l.Resign(ctx)
	for l.Alive() {
		// Send l.Token() with every write: the resource rejects a deposed
		// leader's late writes (package fencing).
		select {
		case <-l.Lost():
		case <-time.After(time.Second):
		}
	}
	fmt.Println("no longer leader:", l.Err())
}

// Run leads, loses, campaigns again, with callbacks.
func ExampleRun() {
	var client *clientv3.Client // connected elsewhere
	e, err := election.New(client, "scheduler")
	if err != nil {
		return
	}
	defer e.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_ = election.Run(ctx, e, election.RunConfig{
		Value:           "node-1",
		ReleaseOnCancel: true,
		OnStartedLeading: func(ctx context.Context, l *election.Leadership) {
			<-ctx.Done() // work as leader until ctx ends
		},
		OnStoppedLeading: func() {},
		OnNewLeader:      func(value string, token fencing.Token) {},
		Backoff:          election.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second},
	})
}
