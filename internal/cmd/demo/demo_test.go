package democmd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/demo"
	"github.com/coordkit/coordkit/scenarios"
	"github.com/coordkit/coordkit/scenarios/report"
)

// tourClaims declares a safety claim "a" and a timing claim "b".
var tourClaims = []scenarios.Claim{{ID: "a", Kind: scenarios.Safety, Text: "claim a"}, {ID: "b", Kind: scenarios.Timing, Text: "claim b"}}

// demoRegistry has the tour's scenarios as fakes that record the Env they
// were given; write-cost misses a timing claim when timingMisses, and the
// story's fenced resource accepts the late write when fencedAccepts. The
// tour itself is tested in internal/demo (TestTour, TestStoryOnly,
// TestDataDirRunTwice).
func demoRegistry(t *testing.T, envs map[string]scenarios.Env, fencedAccepts, timingMisses bool) *scenarios.Registry {
	t.Helper()
	r := scenarios.NewRegistry()
	for _, stop := range demo.Tour() {
		name := stop.Name
		require.NoError(t, r.Register(scenarios.Scenario{Name: name, Summary: name, Claims: tourClaims,
			Run: func(ctx context.Context, env scenarios.Env) (*report.Report, error) {
				envs[name] = env // the tour runs one scenario at a time
				env.Progressf("working on %s", name)
				rep := report.New(name, "")
				fenced := map[bool]string{false: "rejected", true: "accepted"}[fencedAccepts]
				rep.Steps = append(rep.Steps, report.Step{Actor: "fenced", Event: fenced, Text: "A's late write"})
				rep.CheckID("a", "1", "1", true)
				rep.CheckID("b", "2", "2", !(timingMisses && name == "write-cost"))
				return rep, nil
			}}))
	}
	return r
}

// The flags reach every scenario's Env and --out; the events print one
// JSON object a line; a missed claim exits 1 after the whole tour, a
// fenced resource that accepts the late write exits 1 naming the bug.
func TestDemoFlagsAndExitCodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                        string
		fencedAccepts, timingMisses bool
		code, lines                 int
	}{
		{"passes", false, false, cmdutil.ExitOK, 6},
		{"a timing claim missed", false, true, cmdutil.ExitError, 6},
		{"fenced resource accepted", true, false, cmdutil.ExitError, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			envs := map[string]scenarios.Env{}
			dir, out := t.TempDir(), filepath.Join(t.TempDir(), "tour")
			var stdout, stderr bytes.Buffer
			f := cmdutil.NewFactory(cmdutil.IOStreams{In: strings.NewReader(""), Out: &stdout, ErrOut: &stderr})
			f.Global.WriteOut = cmdutil.FormatJSON
			cmd := newDemoCmdWith(f, demoRegistry(t, envs, tc.fencedAccepts, tc.timingMisses))
			cmd.SetArgs([]string{"--data-dir", dir, "--out", out, "--seed", "7", "--ttl", "3s", "--redis", "127.0.0.1:6379"})
			cmd.SetOut(&stderr)
			cmd.SetErr(&stderr)
			err := cmd.ExecuteContext(context.Background())
			require.Equal(t, tc.code, cmdutil.ExitCode(err), "%v; stderr: %s", err, stderr.String())
			if tc.fencedAccepts {
				require.ErrorContains(t, err, "the fenced resource accepted the late write")
			}
			var lines []map[string]any
			for sc := bufio.NewScanner(&stdout); sc.Scan(); {
				var m map[string]any
				require.NoError(t, json.Unmarshal(sc.Bytes(), &m), sc.Text())
				lines = append(lines, m)
			}
			require.Len(t, lines, tc.lines)
			if tc.fencedAccepts {
				return
			}
			require.Equal(t, filepath.Join(out, "fenced-sql.html"), lines[2]["report"])
			require.Equal(t, "done", lines[5]["event"])
			require.Contains(t, stderr.String(), "running experiment fenced-sql ...\n  working on fenced-sql\n", "scenario progress is indented")
			for _, stop := range demo.Tour() {
				env := envs[stop.Name]
				require.Equal(t, filepath.Join(dir, stop.Name), env.TempDir)
				require.Equal(t, int64(7), env.Seed)
				require.Equal(t, 3*time.Second, env.LockTTL)
				require.Equal(t, "127.0.0.1:6379", env.Redis)
				require.NotNil(t, env.StartEtcd)
			}
		})
	}
}
