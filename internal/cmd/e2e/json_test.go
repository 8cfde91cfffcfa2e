package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/lock"
)

// The -w json shapes the tests decode: the stable contract (DESIGN.md), so
// they are written out here as a user's script would read them.

type statusJSON struct {
	Name     string
	Revision int64
	Limit    int
	Held     bool
	Holders  []statusEntryJSON
	Waiters  []statusEntryJSON
}

type statusEntryJSON struct {
	Key   string
	Token int64
	Lease string
	Mode  string
	Slot  *int
	Scope string
	TTL   *int64 `json:"ttl_s"`
}

type claimJSON struct {
	Name     string `json:"name"`
	Owner    string `json:"owner"`
	Revision int64  `json:"revision"`
}

type electJSON struct {
	Event  string  `json:"event"`
	Name   string  `json:"name"`
	ID     string  `json:"id"`
	Token  uint64  `json:"token"`
	Reason string  `json:"reason"`
	Leader *string `json:"leader"`
}

func decodeJSON[T any](t *testing.T, line string) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal([]byte(line), &v), line)
	return v
}

func decodeStatus(t *testing.T, line string) statusJSON { return decodeJSON[statusJSON](t, line) }
func decodeElect(t *testing.T, line string) electJSON   { return decodeJSON[electJSON](t, line) }

// testCtx is a context that ends with the test (or after a minute).
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// holdWithLibrary takes the lock NAME through the library, as another
// process would, and returns the holder.
func holdWithLibrary(t *testing.T, cli *clientv3.Client, name string) *lock.Held {
	t.Helper()
	m, err := lock.New(cli, name)
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	h, err := m.Lock(context.Background())
	require.NoError(t, err)
	return h
}

// waitForKeys polls etcd until prefix has n keys (no event to await from
// outside coordctl) and returns them, oldest first.
func waitForKeys(t *testing.T, cli *clientv3.Client, prefix string, n int) *clientv3.GetResponse {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := cli.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
		require.NoError(t, err)
		if len(resp.Kvs) == n {
			return resp
		}
		if time.Now().After(deadline) {
			t.Fatalf("want %d keys under %q, have %d", n, prefix, len(resp.Kvs))
		}
		time.Sleep(5 * time.Millisecond)
	}
}
