package benchcmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/internal/bench/electbench"
	"github.com/coordkit/coordkit/internal/bench/labbench"
	"github.com/coordkit/coordkit/internal/bench/scalebench"
	"github.com/coordkit/coordkit/internal/bench/sqlbench"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

// runF tests of bench lab, scale, sql and elect --rolling (see
// bench_runf_test.go): flags reach the harness, its result is printed.

func TestBenchLabFlagsReachTheHarness(t *testing.T) {
	t.Parallel()
	h := &recorder[labbench.Options, labbench.Result]{res: labbench.Result{Benchmark: "lab", Throughput: []labbench.Row{
		{Metric: "n3_sequential_writes_per_s", Lab: 100, BareRaft: 200, Unit: "writes/s"}}}}
	mk := func(f *cmdutil.Factory) *cobra.Command { return newBenchLabCmd(f, h.run) }
	def := labbench.Options{Duration: 2 * time.Second, Nodes: []int{3, 5}, Writers: []int{1, 64},
		Delays: []time.Duration{time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond}, Fsync: 2 * time.Millisecond, Writes: 30, Seed: 1}
	for _, format := range []string{cmdutil.FormatJSON, cmdutil.FormatSimple} {
		out, errOut, err := benchRun(t, format, mk)
		require.NoError(t, err)
		requirePrinted(t, format, h.res, h.res.Table(), out)
		got := h.got[len(h.got)-1]
		require.Same(t, errOut, got.Progress, "progress goes to stderr")
		got.Progress = nil
		require.Equal(t, def, got, "the defaults")
	}
	last := func() labbench.Options { o := h.got[len(h.got)-1]; o.Progress = nil; return o }
	for _, tc := range []struct {
		name string
		args []string
		want func(o labbench.Options) labbench.Options
	}{
		{"model: nodes 3,5,7", []string{"--model", "--fsync-latency", "1ms", "--delays", "2ms", "--writes", "5"}, func(o labbench.Options) labbench.Options {
			o.Model, o.Nodes, o.Fsync, o.Delays, o.Writes = true, []int{3, 5, 7}, time.Millisecond, []time.Duration{2 * time.Millisecond}, 5
			return o
		}},
		{"model with --nodes", []string{"--model", "--nodes", "3"}, func(o labbench.Options) labbench.Options {
			o.Model, o.Nodes = true, []int{3}
			return o
		}},
		{"ui: 5 nodes, 16 writers, 6s", []string{"--ui", "--seed", "7"}, func(o labbench.Options) labbench.Options {
			o.UI, o.Nodes, o.Writers, o.Duration, o.Seed = true, []int{5}, []int{16}, 6*time.Second, 7
			return o
		}},
		{"ui with explicit flags", []string{"--ui", "--nodes", "3", "--writers", "8", "--duration", "4s"}, func(o labbench.Options) labbench.Options {
			o.UI, o.Nodes, o.Writers, o.Duration = true, []int{3}, []int{8}, 4*time.Second
			return o
		}},
	} {
		_, _, err := benchRun(t, cmdutil.FormatJSON, mk, tc.args...)
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want(def), last(), tc.name)
	}
}

func TestBenchScaleFlagsReachTheHarness(t *testing.T) {
	t.Parallel()
	h := &recorder[scalebench.Options, scalebench.Result]{res: scalebench.Result{Benchmark: "scale", Fsync: true,
		Rows:  []scalebench.Row{{Curve: scalebench.CurveQueue, Members: 1, Point: "W=1", X: 1, Metric: "handoff_p50_ms", Coordkit: 2, EtcdConcurrency: 40, Unit: "ms"}},
		Notes: []string{"a note"}}}
	mk := func(f *cmdutil.Factory) *cobra.Command { return newBenchScaleCmd(f, h.run) }
	last := func() scalebench.Options { o := h.got[len(h.got)-1]; o.Progress = nil; return o }
	for _, format := range []string{cmdutil.FormatJSON, cmdutil.FormatSimple} {
		out, errOut, err := benchRun(t, format, mk)
		require.NoError(t, err)
		requirePrintedAs(t, format, h.res.Printed(), out)
		require.Same(t, errOut, h.got[len(h.got)-1].Progress, "progress goes to stderr")
		require.Equal(t, scalebench.DefaultOptions(), last(), "the defaults")
	}

	_, _, err := benchRun(t, cmdutil.FormatJSON, mk, "--quick", "--locks", "7", "--unsafe-no-fsync", "--skip-concurrency", "--keepalive", "once")
	require.NoError(t, err)
	want := scalebench.QuickOptions()
	want.Locks, want.NoFsync, want.SkipConcurrency, want.KeepAlive = []int{7}, true, true, "once"
	require.Equal(t, want, last(), "--quick, an explicit --locks wins")

	_, _, err = benchRun(t, cmdutil.FormatJSON, mk, "--curves", "queue,candidates", "--shapes", "2x3", "--members", "1", "--ttl", "3s")
	require.NoError(t, err)
	want = scalebench.DefaultOptions()
	want.Locks, want.IdleSessions, want.NoCosts, want.Shapes, want.Members, want.TTL = nil, nil, true, []scalebench.Shape{{Elections: 2, Candidates: 3}}, []int{1}, 3*time.Second
	require.Equal(t, want, last(), "curves left out get no points")

	_, _, err = benchRun(t, cmdutil.FormatJSON, mk, "--curves", "queue,nope")
	require.Equal(t, cmdutil.ExitUsage, cmdutil.ExitCode(err), "%v", err)
	require.EqualError(t, err, `--curves: unknown curve "nope": want some of [costs queue locks candidates sessions]`)
	_, _, err = benchRun(t, cmdutil.FormatJSON, mk, "--shapes", "1by5")
	require.Equal(t, cmdutil.ExitUsage, cmdutil.ExitCode(err), "%v", err)

	// --from runs nothing: it reads the saved result and draws it with --svg.
	dir := t.TempDir()
	js, svg := filepath.Join(dir, "scale.json"), filepath.Join(dir, "scale.svg")
	b, err := json.Marshal(h.res)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(js, b, 0o644))
	runs := len(h.got)
	out, errOut, err := benchRun(t, cmdutil.FormatSimple, mk, "--from", js, "--svg", svg)
	require.NoError(t, err)
	require.Len(t, h.got, runs, "--from runs no harness")
	requirePrintedAs(t, cmdutil.FormatSimple, h.res.Printed(), out)
	require.Contains(t, errOut.String(), "bench scale: wrote "+svg)
	drawn, err := os.ReadFile(svg)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(drawn), "<svg"), string(drawn[:min(len(drawn), 80)]))

	_, _, err = benchRun(t, cmdutil.FormatJSON, mk, "--from", svg)
	require.ErrorContains(t, err, "bench scale: "+svg+" is not the -w json output of coordctl bench scale")
	require.Equal(t, cmdutil.ExitError, cmdutil.ExitCode(err))
}

func TestBenchSQLFlagsReachTheHarness(t *testing.T) {
	t.Parallel()
	h := &recorder[sqlbench.Options, sqlbench.Result]{res: sqlbench.Result{Benchmark: "sql", Driver: "sqlite", Server: "3", Writers: 16, Fence: "do",
		Rows: []sqlbench.Row{{Metric: "sequential_p50_ms", Fenced: 2, Unfenced: 1, Unit: "ms"}}}}
	mk := func(f *cmdutil.Factory) *cobra.Command { return newBenchSQLCmd(f, h.run) }
	last := func() sqlbench.Options { o := h.got[len(h.got)-1]; o.Progress = nil; return o }
	for _, format := range []string{cmdutil.FormatJSON, cmdutil.FormatSimple} {
		out, errOut, err := benchRun(t, format, mk)
		require.NoError(t, err)
		requirePrinted(t, format, h.res, h.res.Table(), out)
		require.Same(t, errOut, h.got[len(h.got)-1].Progress, "progress goes to stderr")
		require.Equal(t, sqlbench.Options{Driver: "sqlite", Iterations: 400, PerWriter: 50, Writers: 16, Rounds: 4, Fence: sqlbench.FenceDo}, last(), "the defaults")
	}
	dsn := "postgres://root:s3cret@127.0.0.1:5432/test"
	_, _, err := benchRun(t, cmdutil.FormatJSON, mk, "--driver", "postgres", "--dsn", dsn, "--iterations", "5", "--per-writer", "2",
		"--writers", "3", "--rounds", "1", "--fence", "both", "--recheck")
	require.NoError(t, err)
	require.Equal(t, sqlbench.Options{Driver: "postgres", DSN: dsn, Iterations: 5, PerWriter: 2, Writers: 3, Rounds: 1, Fence: sqlbench.FenceBoth, Recheck: true}, last())

	// A sqlite --dsn is normalized as 'coordctl sql' does before the harness sees it.
	path := filepath.Join(t.TempDir(), "b.db")
	norm, err := sqlfence.NormalizeDSN(sqlfence.SQLite, path)
	require.NoError(t, err)
	require.NotEqual(t, path, norm, "a plain path gets sqlite's options")
	_, _, err = benchRun(t, cmdutil.FormatJSON, mk, "--dsn", path)
	require.NoError(t, err)
	require.Equal(t, norm, last().DSN)

	// A failed run names the server, never the password.
	h.err = &os.PathError{Op: "dial", Path: dsn, Err: os.ErrDeadlineExceeded}
	_, _, err = benchRun(t, cmdutil.FormatJSON, mk, "--driver", "postgres", "--dsn", dsn)
	require.Equal(t, cmdutil.ExitError, cmdutil.ExitCode(err))
	require.ErrorContains(t, err, "bench sql: ")
	require.ErrorContains(t, err, "127.0.0.1:5432")
	require.NotContains(t, err.Error(), "s3cret")
}

func TestBenchElectRollingFlagsReachTheHarness(t *testing.T) {
	t.Parallel()
	h := &recorder[electbench.RollingOptions, electbench.RollingResult]{res: electbench.RollingResult{Benchmark: "elect-rolling", Replicas: 3,
		Rows: []electbench.RollingRow{{Metric: "leadership_changes", Unit: "count"}}}}
	notElect := func(context.Context, electbench.Options) (electbench.Result, error) {
		t.Error("--rolling runs the rolling harness only")
		return electbench.Result{}, nil
	}
	mk := func(f *cmdutil.Factory) *cobra.Command { return newBenchElectCmd(f, notElect, h.run) }
	html := filepath.Join(t.TempDir(), "rolling.html")
	for _, format := range []string{cmdutil.FormatJSON, cmdutil.FormatSimple} {
		out, errOut, err := benchRun(t, format, mk, "--rolling", "3", "--preempt-rounds", "4", "--html", html)
		require.NoError(t, err)
		requirePrintedAs(t, format, h.res.Printed(), out)
		got := h.got[len(h.got)-1]
		require.Same(t, errOut, got.Progress, "progress goes to stderr")
		require.NotEmpty(t, got.Binary, "the sidecars run this binary")
		got.Progress, got.Binary = nil, ""
		require.Equal(t, electbench.RollingOptions{Replicas: 3, PreemptRounds: 4}, got)
		page, err := os.ReadFile(html)
		require.NoError(t, err)
		require.Contains(t, string(page), "coordctl bench elect --rolling")
	}
	_, _, err := benchRun(t, cmdutil.FormatJSON, mk, "--rolling", "3")
	require.NoError(t, err)
	require.Equal(t, 20, h.got[len(h.got)-1].PreemptRounds, "the default")
}
