package fencing_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/coordkit/coordkit/fencing"
)

// A service protects its own store: every write carries the writer's token,
// and the guard turns away a holder whose lock has passed to someone else.
func ExampleGuard() {
	var g fencing.Guard
	store := map[string]string{}
	write := func(scope string, tok fencing.Token, key, value string) error {
		if _, err := g.Admit(scope, tok); err != nil {
			return err
		}
		store[key] = value
		return nil
	}

	fmt.Println(write("jobs/nightly/", 41, "report", "from holder 41"))
	fmt.Println(write("jobs/nightly/", 57, "report", "from holder 57"))
	err := write("jobs/nightly/", 41, "report", "late write of holder 41")
	var se *fencing.StaleError
	fmt.Println(errors.As(err, &se), se.Token, se.Floor, store["report"])
	// Output:
	// <nil>
	// <nil>
	// true 41 57 from holder 57
}

// The durable guard fsyncs a raised floor before Admit returns: after a
// restart the old holder is still rejected.
func ExampleDurableGuard() {
	dir, _ := os.MkdirTemp("", "fencing-example-")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "floors.log")

	g, _ := fencing.OpenDurableGuard(path)
	g.Admit("jobs/nightly/", 57)
	g.Close()

	g, _ = fencing.OpenDurableGuard(path) // a restart
	defer g.Close()
	_, err := g.Admit("jobs/nightly/", 41)
	fmt.Println(errors.Is(err, fencing.ErrStale), g.Floor("jobs/nightly/"))
	// Output: true 57
}

// Check computes an admission without applying it, so a store with its own
// transaction can persist the new floor with the data and apply after commit.
func ExampleGuard_Check() {
	var g fencing.Guard
	a, err := g.Check("jobs/nightly/", 57)
	if err != nil {
		return // stale: reject the write
	}
	if a.Raises() {
		// Persist the new floor in the same transaction as the write, fsync, then apply.
		fmt.Println("persist floor", a.Scope, a.NewFloor())
	}
	g.Apply(a)
	fmt.Println(g.Floor("jobs/nightly/"))
	// Output:
	// persist floor jobs/nightly/ 57
	// 57
}

func ExampleClient() {
	dir, _ := os.MkdirTemp("", "fencing-example-")
	defer os.RemoveAll(dir)
	res, _ := fencing.NewResource(fencing.ResourceConfig{DataDir: dir})
	defer res.Close()
	srv := httptest.NewServer(res)
	defer srv.Close()

	ctx := context.Background()
	c := &fencing.Client{BaseURL: srv.URL, HTTP: srv.Client()}
	c.Put(ctx, "report", "v1", 41, "jobs/nightly/")
	c.Fence(ctx, 57, "jobs/nightly/") // the next holder fences before it starts
	_, err := c.Put(ctx, "report", "late", 41, "jobs/nightly/")
	fmt.Println(err)
	e, _ := c.Get(ctx, "report")
	fmt.Println(e.Value, e.Token)
	// Output:
	// fencing: stale token 41 for scope "jobs/nightly/": floor is 57
	// v1 41
}
