package benchcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/internal/bench/electbench"
	"github.com/coordkit/coordkit/internal/bench/lockbench"
	"github.com/coordkit/coordkit/internal/bench/rwlockbench"
	"github.com/coordkit/coordkit/internal/bench/sembench"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

// The bench commands' tests check what the command does: its flags reach
// the harness's Options, and it prints the harness's Result (-w json: the
// Result's own JSON form; simple: its table). What a harness measures is
// tested in its package (internal/bench/...), so the commands run a
// recording harness instead of a real one (cli/cli's runF).

// benchRun runs the bench subcommand mk builds, on a factory with -w
// format, with args; it returns stdout, the factory's stderr and the error.
func benchRun(t *testing.T, format string, mk func(*cmdutil.Factory) *cobra.Command, args ...string) (string, *bytes.Buffer, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	f := cmdutil.NewFactory(cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	f.Global.WriteOut = format
	cmd := mk(f)
	cmd.SetArgs(append([]string{}, args...)) // never nil: cobra would read os.Args
	cmd.SetOut(&errOut)
	cmd.SetErr(&errOut)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := cmd.ExecuteContext(ctx)
	return out.String(), &errOut, err
}

// recorder is a harness that records its options and returns res, err.
type recorder[O, R any] struct {
	got []O
	res R
	err error
}

func (r *recorder[O, R]) run(_ context.Context, o O) (R, error) {
	r.got = append(r.got, o)
	return r.res, r.err
}

// requirePrinted checks that out is res as -w format prints it.
func requirePrinted(t *testing.T, format string, res any, tab bench.Table, out string) {
	t.Helper()
	requirePrintedAs(t, format, bench.Printed{Result: res, Tables: []bench.Table{tab}}, out)
}

// requirePrintedAs checks that out is want as -w format prints it: its
// result's JSON, or its text form.
func requirePrintedAs(t *testing.T, format string, want bench.Printed, out string) {
	t.Helper()
	if format == cmdutil.FormatJSON {
		want, err := json.Marshal(want.Result)
		require.NoError(t, err)
		require.Equal(t, 1, strings.Count(out, "\n"), "one JSON line: %q", out)
		require.JSONEq(t, string(want), out)
		return
	}
	var text bytes.Buffer
	require.NoError(t, want.WriteSimple(&text))
	require.Equal(t, text.String(), out)
}

func TestBenchLockFlagsReachTheHarness(t *testing.T) {
	t.Parallel()
	h := &recorder[lockbench.Options, lockbench.Result]{res: lockbench.Result{Benchmark: "lock", Rows: []lockbench.Row{
		{Metric: "handoff_p50_ms", Coordkit: 1.5, EtcdConcurrency: 30, Unit: "ms"}},
		Breakdown: []lockbench.BreakdownRow{{Step: "plus_loss_watch", P50Ms: 1.07, AddedMs: 0.056, KVRequestsPerOp: 2, WatchRequestsPerOp: 2.1}}}}
	mk := func(f *cmdutil.Factory) *cobra.Command { return newBenchLockCmd(f, h.run) }
	for _, format := range []string{cmdutil.FormatJSON, cmdutil.FormatSimple} {
		out, errOut, err := benchRun(t, format, mk)
		require.NoError(t, err)
		breakdown, ok := h.res.BreakdownTable()
		require.True(t, ok)
		requirePrintedAs(t, format, bench.Printed{Result: h.res, Tables: []bench.Table{h.res.Table(), breakdown}}, out)
		if format == cmdutil.FormatSimple {
			require.Contains(t, out, "plus_loss_watch", "the breakdown follows the table")
		}
		got := h.got[len(h.got)-1]
		require.Same(t, errOut, got.Progress, "progress goes to stderr")
		got.Progress = nil
		require.Equal(t, lockbench.Options{Iterations: 200, Handoffs: 100, Duration: 3 * time.Second, Hold: time.Millisecond,
			Workers: []int{2, 8, 32}, CrashHandoffs: 5}, got, "the defaults")
	}
	_, _, err := benchRun(t, cmdutil.FormatJSON, mk, "--unsafe-no-fsync", "--iterations", "5", "--handoffs", "3", "--duration", "300ms",
		"--hold", "2ms", "--workers", "2,3", "--against", "redsync", "--redis", "127.0.0.1:6379")
	require.NoError(t, err)
	got := h.got[len(h.got)-1]
	got.Progress = nil
	require.Equal(t, lockbench.Options{Iterations: 5, Handoffs: 3, Duration: 300 * time.Millisecond, Hold: 2 * time.Millisecond,
		Workers: []int{2, 3}, NoFsync: true, Against: []string{"redsync"}, Redis: "127.0.0.1:6379", CrashHandoffs: 5}, got)

	_, _, err = benchRun(t, cmdutil.FormatJSON, mk, "--against", "pg-advisory", "--dsn", "postgres://u@127.0.0.1:5432/db", "--crash-handoffs", "2")
	require.NoError(t, err)
	got = h.got[len(h.got)-1]
	require.Equal(t, []string{"pg-advisory"}, got.Against)
	require.Equal(t, "postgres://u@127.0.0.1:5432/db", got.DSN)
	require.Equal(t, 2, got.CrashHandoffs)
	require.NotEmpty(t, got.Coordctl, "the crash handoff's holder processes are this binary")

	_, _, err = benchRun(t, cmdutil.FormatJSON, mk, "--crash-handoffs", "40")
	require.NoError(t, err)
	got = h.got[len(h.got)-1]
	require.Equal(t, 40, got.CrashHandoffs)
	require.NotEmpty(t, got.Coordctl, "--crash-handoffs alone measures coordkit's crash handoff")
}

// A harness's errors: invalid options are usage errors (exit 2), others
// exit 1 naming the bench, and nothing is printed on stdout.
func TestBenchHarnessErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		code int
		want string
	}{
		{fmt.Errorf("%w: --iterations must be positive", lockbench.ErrOptions), cmdutil.ExitUsage, "--iterations must be positive"},
		{errors.New("etcd did not start"), cmdutil.ExitError, "bench lock: etcd did not start"},
	} {
		h := &recorder[lockbench.Options, lockbench.Result]{err: tc.err}
		out, _, err := benchRun(t, cmdutil.FormatJSON, func(f *cmdutil.Factory) *cobra.Command { return newBenchLockCmd(f, h.run) })
		require.Equal(t, tc.code, cmdutil.ExitCode(err), "%v", err)
		require.ErrorContains(t, err, tc.want)
		require.Empty(t, out)
	}
}

func TestBenchElectFlagsReachTheHarness(t *testing.T) {
	t.Parallel()
	h := &recorder[electbench.Options, electbench.Result]{res: electbench.Result{Benchmark: "elect", Rows: []electbench.Row{
		{Metric: "handover_p50_ms", Coordkit: 2, EtcdConcurrency: 101, Unit: "ms"}}}}
	mk := func(f *cmdutil.Factory) *cobra.Command { return newBenchElectCmd(f, h.run, nil) }
	for _, format := range []string{cmdutil.FormatJSON, cmdutil.FormatSimple} {
		out, errOut, err := benchRun(t, format, mk)
		require.NoError(t, err)
		requirePrinted(t, format, h.res, h.res.Table(), out)
		got := h.got[len(h.got)-1]
		require.Same(t, errOut, got.Progress)
		got.Progress = nil
		require.Equal(t, electbench.Options{Rounds: 40, CrashRounds: 3}, got, "the defaults")
	}
	_, _, err := benchRun(t, cmdutil.FormatJSON, mk, "--rounds", "3", "--crash-rounds", "1")
	require.NoError(t, err)
	got := h.got[len(h.got)-1]
	got.Progress = nil
	require.Equal(t, electbench.Options{Rounds: 3, CrashRounds: 1}, got)
}

func TestBenchRWLockFlagsReachTheHarness(t *testing.T) {
	t.Parallel()
	h := &recorder[rwlockbench.Options, rwlockbench.Result]{res: rwlockbench.Result{Benchmark: "rwlock", Rows: []rwlockbench.Row{
		{Metric: "readers_batch_p50_ms", Coordkit: 4, EtcdRecipes: 40, Unit: "ms"}}}}
	mk := func(f *cmdutil.Factory) *cobra.Command { return newBenchRWLockCmd(f, h.run) }
	for _, format := range []string{cmdutil.FormatJSON, cmdutil.FormatSimple} {
		out, errOut, err := benchRun(t, format, mk)
		require.NoError(t, err)
		requirePrinted(t, format, h.res, h.res.Table(), out)
		got := h.got[len(h.got)-1]
		require.Same(t, errOut, got.Progress)
		got.Progress = nil
		require.Equal(t, rwlockbench.Options{Batches: 20, Readers: 8, Handoffs: 100, Duration: 3 * time.Second, Hold: time.Millisecond}, got, "the defaults")
	}
	_, _, err := benchRun(t, cmdutil.FormatJSON, mk, "--unsafe-no-fsync", "--batches", "2", "--readers", "3", "--handoffs", "4",
		"--duration", "300ms", "--hold", "5ms")
	require.NoError(t, err)
	got := h.got[len(h.got)-1]
	got.Progress = nil
	require.Equal(t, rwlockbench.Options{Batches: 2, Readers: 3, Handoffs: 4, Duration: 300 * time.Millisecond, Hold: 5 * time.Millisecond, NoFsync: true}, got)
}

func TestBenchSemFlagsReachTheHarness(t *testing.T) {
	t.Parallel()
	ten := 10.0
	h := &recorder[sembench.Options, sembench.Result]{res: sembench.Result{Benchmark: "sem", Rows: []sembench.Row{
		{Metric: "limit_1_acq_per_s", Coordkit: 20, EtcdConcurrency: &ten, Unit: "1/s"},
		{Metric: "limit_2_acq_per_s", Coordkit: 30, Unit: "1/s"}}}}
	mk := func(f *cmdutil.Factory) *cobra.Command { return newBenchSemCmd(f, h.run) }
	for _, format := range []string{cmdutil.FormatJSON, cmdutil.FormatSimple} {
		out, errOut, err := benchRun(t, format, mk)
		require.NoError(t, err)
		requirePrinted(t, format, h.res, h.res.Table(), out)
		got := h.got[len(h.got)-1]
		require.Same(t, errOut, got.Progress)
		got.Progress = nil
		require.Equal(t, sembench.Options{Limits: []int{1, 3, 10}, Duration: 3 * time.Second, Handoffs: 100, Hold: time.Millisecond}, got, "the defaults")
	}
	_, _, err := benchRun(t, cmdutil.FormatJSON, mk, "--unsafe-no-fsync", "--limits", "1,2", "--handoffs", "2", "--duration", "300ms", "--hold", "3ms")
	require.NoError(t, err)
	got := h.got[len(h.got)-1]
	got.Progress = nil
	require.Equal(t, sembench.Options{Limits: []int{1, 2}, Handoffs: 2, Duration: 300 * time.Millisecond, Hold: 3 * time.Millisecond, NoFsync: true}, got)
}
