//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
)

// `coordctl sidecar --api`: SIGTERM releases the application's holds — its
// keys deleted, so the next holder is granted in one commit — and tells
// each stream that the sidecar is shutting down. The sidecar closed its
// etcd client before the API it mounts on it, so the release failed ("the
// client connection is closing") and the key stayed until the API's lease
// expired: the next holder waited a TTL.
func TestSidecarE2EAPIReleasesHoldsOnStop(t *testing.T) {
	t.Parallel()
	srv, cli := etcdtest.StartWithClient(t)
	p := startSidecarProc(t, nil, srv.Endpoints(), "e2e/api-stop", "a", "--api", "--ttl", "5s")
	p.awaitLine(t, "elected", 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	events := postHold(t, ctx, p.url, `{"name":"e2e/api-stop-lock"}`)
	next := func() map[string]any {
		t.Helper()
		require.True(t, events.Scan(), "the stream ended; sidecar stderr: %s", p.stderr.String())
		var ev map[string]any
		require.NoError(t, json.Unmarshal(events.Bytes(), &ev))
		return ev
	}
	acquired := next()
	require.Equal(t, "acquired", acquired["event"])
	key, _ := acquired["key"].(string)
	require.NotEmpty(t, key)

	p.signal(t, syscall.SIGTERM)
	require.Equal(t, exitOK, p.wait(t, 20*time.Second))
	ev := next()
	for ev["event"] == "held" {
		ev = next()
	}
	require.Equal(t, "lost", ev["event"], ev)
	reason, _ := ev["reason"].(string)
	require.Contains(t, reason, "shutting down")
	require.NotContains(t, reason, "release:", "the release failed")
	resp, err := cli.Get(ctx, key)
	require.NoError(t, err)
	require.Zero(t, resp.Count, "the hold's key outlived the sidecar; stderr: %s", p.stderr.String())
}
