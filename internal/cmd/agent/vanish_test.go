package agentcmd

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/nettest"
)

// TestAgentReleasesAVanishedClient: a client whose machine dies, or whose
// network is cut, sends no FIN, and the agent's "held" lines go
// unacknowledged. Its hold ends about the agent's --ttl after that, as a
// process's lease would, not when TCP gives up retransmitting (about 15
// minutes; the next holder waited out its whole 30 s timeout before). The
// same for the API a sidecar serves with --api, on the sidecar's --ttl.
func TestAgentReleasesAVanishedClient(t *testing.T) {
	t.Parallel()
	const ttl = 2 * time.Second
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"agent", []string{"agent", "--ttl", ttl.String()}},
		{"sidecar --api", []string{"sidecar", "--election", "svc", "--id", "web-1", "--api", "--ttl", ttl.String()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			vanishedClientReleases(t, ttl, tc.args...)
		})
	}
}

func vanishedClientReleases(t *testing.T, ttl time.Duration, args ...string) {
	curl := interpreter(t, "curl", "curl")
	host := nettest.NewHost(t)
	tokenFile := filepath.Join(t.TempDir(), "api-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600))
	url, _ := startCoordctlOn(t, net.JoinHostPort(host.LocalAddr, "0"), append(args, "--api-token-file", tokenFile)...)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	holder := host.Command(ctx, curl, "-sN", "-H", "Authorization: Bearer s3cret", "-H", "Content-Type: application/json",
		"-d", `{"name":"jobs/vanish","timeout":20}`, url+"/v1/lock")
	out, err := holder.StdoutPipe()
	require.NoError(t, err)
	holder.Stderr = os.Stderr
	require.NoError(t, holder.Start())
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	sc := bufio.NewScanner(out)
	require.True(t, sc.Scan(), "the holder on the other host read nothing")
	require.Contains(t, sc.Text(), `"event":"acquired"`)

	host.Cut()
	cut := time.Now()
	req, err := http.NewRequestWithContext(ctx, "POST", url+"/v1/lock", strings.NewReader(`{"name":"jobs/vanish","timeout":30}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer s3cret")
	req.Header.Set("Content-Type", "application/json")
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	next := bufio.NewScanner(resp.Body)
	for next.Scan() {
		var ev struct{ Event, Code, Message string }
		require.NoError(t, json.Unmarshal(next.Bytes(), &ev), next.Text())
		if ev.Event == "waiting" {
			continue
		}
		require.Equal(t, "acquired", ev.Event, "%s", next.Text())
		break
	}
	took := time.Since(cut)
	t.Logf("the next holder acquired %s after the first one's host was cut off (--ttl %s)", took.Round(time.Millisecond), ttl)
	require.Less(t, took, 15*time.Second, "the vanished client's hold outlived the TTL by far")
}
