package election_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/session"
)

// exampleEndpoints are the client URLs of the package's embedded test etcd
// (started once, in election_test.go); a program passes its own.
func exampleEndpoints() []string { return etcd.Endpoints() }

// Campaign, act with the fencing token while leading, resign; the next
// leader's token is larger.
func ExampleElection_Campaign() {
	client, err := clientv3.New(clientv3.Config{Endpoints: exampleEndpoints()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	e, err := election.New(client, "scheduler", election.WithTTL(5*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	l, err := e.Campaign(ctx, "node-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	// Send l.Token() and l.Scope() with every write while l.Alive(): the
	// resource rejects a deposed leader's late writes (package fencing).
	fmt.Println("leading:", l.Value(), "scope", l.Scope(), l.Alive())
	leader, err := e.Leader(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("everyone sees:", leader.Value, leader.Token == l.Token())
	first := l.Token()
	if err := l.Resign(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("after resigning:", l.Alive())

	next, err := e.Campaign(ctx, "node-2")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer next.Resign(context.Background())
	fmt.Println("next leader's token is larger:", next.Token() > first)
	// Output:
	// leading: node-1 scope scheduler/ true
	// everyone sees: node-1 true
	// after resigning: false
	// next leader's token is larger: true
}

// Run campaigns, leads until the leadership ends, and returns (a program
// that wants to lead again calls it again); here it leads once and gives
// the leadership up when its context ends.
func ExampleRun() {
	client, err := clientv3.New(clientv3.Config{Endpoints: exampleEndpoints()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	e, err := election.New(client, "batch")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err = election.Run(ctx, e, election.RunConfig{
		Value:           "node-1",
		ReleaseOnCancel: true,
		OnStartedLeading: func(ctx context.Context, l *election.Leadership) {
			fmt.Println("started leading with a token:", l.Token() > 0)
			cancel() // the work is done; a real leader works until ctx ends
			<-ctx.Done()
		},
		OnStoppedLeading: func() { fmt.Println("stopped leading") },
		OnNewLeader:      func(value string, token fencing.Token) {},
		Backoff:          session.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second},
	})
	fmt.Println("Run returned:", err)
	// Output:
	// started leading with a token: true
	// stopped leading
	// Run returned: <nil>
}

// IsLeader answers "am I the leader?" without asking etcd; Check, served
// on a liveness probe's path, fails only when the process goes on acting
// as the leader past the moment it could trust its leadership (stuck):
// restart it then. A candidate that does not lead is healthy.
func ExampleElection_Check() {
	client, err := clientv3.New(clientv3.Config{Endpoints: exampleEndpoints()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	e, err := election.New(client, "probed")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	healthz := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if err := e.Check(10 * time.Second); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	probe := func() int {
		rec := httptest.NewRecorder()
		healthz.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		return rec.Code
	}
	fmt.Println("leader:", e.IsLeader(), "probe:", probe())
	l, err := e.Campaign(ctx, "node-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("leader:", e.IsLeader(), "probe:", probe())
	if err := l.Resign(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("leader:", e.IsLeader(), "probe:", probe())
	// Output:
	// leader: false probe: 200
	// leader: true probe: 200
	// leader: false probe: 200
}
