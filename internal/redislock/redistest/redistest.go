// Package redistest gives tests the shared Redis server named by
// COORDKIT_TEST_REDIS_ADDR, under a key prefix of their own that is
// deleted when the test ends.
//
// Without the variable a test that asks for Redis is skipped, naming it.
// With it set and nobody answering, the test is skipped too, except under
// CI=true, where that fails it: CI promises a server.
package redistest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/coordkit/coordkit/internal/redislock"
)

// EnvAddr is the variable naming the test Redis server (host:port).
const EnvAddr = "COORDKIT_TEST_REDIS_ADDR"

// Addr returns the test server's address after checking that it answers;
// see the package doc for when it skips or fails t.
func Addr(t testing.TB) string {
	t.Helper()
	addr := os.Getenv(EnvAddr)
	if addr == "" {
		t.Skipf("%s is not set: no Redis to test against", EnvAddr)
	}
	c, err := redislock.Dial(context.Background(), addr, 5*time.Second)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s=%s under CI=true: %v", EnvAddr, addr, err)
		}
		t.Skipf("%s=%s does not answer: %v", EnvAddr, addr, err)
	}
	_ = c.Close()
	return addr
}

// Client returns a client of the test server and a keyspace of the test's
// own; when the test ends every key under it is deleted and the client is
// closed.
func Client(t testing.TB, what string) (*redis.Client, redislock.Keyspace) {
	t.Helper()
	addr := Addr(t)
	c, err := redislock.Dial(context.Background(), addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := redislock.NewKeyspace(what)
	if err != nil {
		_ = c.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := ks.Cleanup(context.Background(), c); err != nil {
			t.Errorf("delete the test's keys: %v", err)
		}
		_ = c.Close()
	})
	return c, ks
}
