package sidecarroot

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/buildinfo"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil/program"
)

// What the slim binary must not link: the lab's Raft, the SQL drivers,
// Redis, the browser driver, etcd's server (no embedded etcd) and its
// disk store.
var forbidden = regexp.MustCompile(`^(github\.com/hashicorp/raft|github\.com/chromedp|github\.com/jackc/pgx|github\.com/go-sql-driver|modernc\.org/sqlite|github\.com/redis|github\.com/go-redsync|go\.etcd\.io/etcd/server|go\.etcd\.io/bbolt|github\.com/coordkit/coordkit/(cluster|scenarios|internal/(etcdembed|labweb|bench|safety|cmd/sql)))(/|$)`)

// sidecarTags reads the slim build's tags from the Makefile, which builds
// the binary and its image with them.
func sidecarTags(t *testing.T) string {
	t.Helper()
	mk, err := os.ReadFile(filepath.Join("..", "..", "..", "Makefile"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^SIDECAR_TAGS \?= (\S+)$`).FindSubmatch(mk)
	require.NotNil(t, m, "the Makefile sets SIDECAR_TAGS")
	return string(m[1])
}

func deps(t *testing.T, tags, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-tags", tags, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	out, err := cmd.Output()
	require.NoError(t, err, "go list -deps %s", pkg)
	return strings.Fields(string(out))
}

func offending(deps []string) []string {
	var out []string
	for _, d := range deps {
		if forbidden.MatchString(d) {
			out = append(out, d)
		}
	}
	return out
}

func TestSlimBinaryLinksOnlyTheSidecar(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs go list")
	}
	tags := sidecarTags(t)
	slim := deps(t, tags, "github.com/coordkit/coordkit/cmd/coordkit-sidecar")
	require.Empty(t, offending(slim), "coordkit-sidecar links what only coordctl needs")
	require.NotContains(t, slim, "html/template", "with %s, gRPC's request tracing (x/net/trace) is out", tags)
	require.Contains(t, slim, "go.etcd.io/etcd/client/v3")
	require.Contains(t, slim, "github.com/coordkit/coordkit/internal/sidecar")

	// The check can fail: coordctl links every one of the kinds it rejects.
	full := deps(t, "", "github.com/coordkit/coordkit/cmd/coordctl")
	got := strings.Join(offending(full), " ")
	for _, want := range []string{"github.com/hashicorp/raft", "go.etcd.io/etcd/server/v3/embed", "github.com/jackc/pgx", "modernc.org/sqlite", "github.com/go-sql-driver/mysql", "github.com/redis/go-redis"} {
		require.Contains(t, got, want)
	}
}

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	f := cmdutil.NewFactory(cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	code = program.Execute(context.Background(), f, NewCmd(f), args, program.EtcdDeadlineHint)
	return code, out.String(), errOut.String()
}

func TestTheTreeIsCoordctlsSidecar(t *testing.T) {
	code, out, stderr := run(t, "version", "-w", "json")
	require.Equal(t, cmdutil.ExitOK, code, stderr)
	var v buildinfo.Info
	require.NoError(t, json.Unmarshal([]byte(out), &v), out)
	require.Equal(t, "github.com/coordkit/coordkit", v.Module)

	code, out, _ = run(t, "sidecar", "--help")
	require.Equal(t, cmdutil.ExitOK, code)
	require.Contains(t, out, "--election")
	code, out, _ = run(t, "sidecar", "resign", "--help")
	require.Equal(t, cmdutil.ExitOK, code)
	require.Contains(t, out, "--api-token-file")

	code, _, stderr = run(t, "lock", "x")
	require.Equal(t, cmdutil.ExitUsage, code, "coordctl's other commands are not here")
	require.Contains(t, stderr, `coordkit-sidecar: unknown command "lock"`)

	code, _, stderr = run(t, "sidecar", "--id", "a")
	require.Equal(t, cmdutil.ExitUsage, code, "the sidecar's own checks: --election is required")
	require.Contains(t, stderr, "election")
}
