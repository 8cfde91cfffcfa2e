package root

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
)

func TestElectCoordUsageErrors(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"bad policy", []string{"elect", "svc", "--policy", "random"}, "invalid --policy"},
		{"bad version", []string{"elect", "svc", "--version", "latest"}, "invalid --version"},
		{"bad label", []string{"elect", "svc", "--label", "zone"}, "invalid --label"},
		{"candidates with id", []string{"elect", "svc", "--candidates", "--id", "x"}, "--candidates"},
		{"observe with policy", []string{"elect", "svc", "--observe", "--policy", "priority"}, "not with --candidates or --observe"},
		{"sidecar bad policy", []string{"sidecar", "--election", "svc", "--id", "a", "--policy", "x"}, "invalid --policy"},
		{"check bad policy", []string{"check", "election-safety", "--policy", "x"}, "invalid --policy"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := runInProcess(context.Background(), map[string]string{"COORDCTL_ENDPOINTS": "127.0.0.1:1"}, tc.args...)
			require.Equal(t, cmdutil.ExitUsage, res.Code, res.Stderr)
			require.Contains(t, res.Stderr, tc.want)
		})
	}
}

// Two coordctl elect candidates under newest-version: --candidates lists
// both with attributes; the newer one, joining second, gets leadership by a
// handover, and the old leader prints handed-over and exits 0.
func TestElectCoordCandidatesAndHandover(t *testing.T) {
	srv := etcdtest.Start(t)
	ep := srv.Endpoints()[0]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	old := startElectInProcess(ctx, ep, "-w", "json", "elect", "svc", "--id", "old", "--policy", "newest-version", "--version", "1.0.0")
	require.Equal(t, "elected", decodeElect(t, old.out.line(t)).Event)

	res := runInProcess(ctx, map[string]string{"COORDCTL_ENDPOINTS": ep}, "-w", "json", "elect", "svc", "--candidates")
	require.Equal(t, 0, res.Code, res.Stderr)
	var list struct {
		Event      string `json:"event"`
		Candidates []struct {
			Leader     bool `json:"leader"`
			Attributes struct {
				ID      string `json:"id"`
				Version string `json:"version"`
			} `json:"attributes"`
			Policy string `json:"policy"`
		} `json:"candidates"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &list), res.Stdout)
	require.Equal(t, "candidates", list.Event)
	require.Len(t, list.Candidates, 1)
	require.Equal(t, "old", list.Candidates[0].Attributes.ID)
	require.Equal(t, "newest-version", list.Candidates[0].Policy)

	newer := startElectInProcess(ctx, ep, "-w", "json", "elect", "svc", "--id", "new", "--policy", "newest-version", "--version", "1.1.0")
	ev := decodeElect(t, old.out.line(t))
	require.Equal(t, "handed-over", ev.Event)
	require.Contains(t, ev.Reason, "handed over to it")
	require.Equal(t, 0, old.wait(t))
	won := decodeElect(t, newer.out.line(t))
	require.Equal(t, "elected", won.Event)

	res = runInProcess(ctx, map[string]string{"COORDCTL_ENDPOINTS": ep}, "elect", "svc", "--candidates")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "leader  token=")
	require.Contains(t, res.Stdout, "id=new policy=newest-version priority=0 version=1.1.0")
	cancel()
	require.Equal(t, 0, newer.wait(t))
}
