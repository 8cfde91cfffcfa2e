package sqlcli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

// The sql commands' tests here check what the commands do: their flags
// (and a holder's environment) reach Run's Request, and they print its
// Result or error with the right exit code. What a run does on each engine
// is tested in run_test.go, so these run a recorder (cli/cli's runF).

type sqlRecorder struct {
	got []Request
	res Result
	err error
}

func (r *sqlRecorder) run(_ context.Context, req Request) (Result, error) {
	r.got = append(r.got, req)
	return r.res, r.err
}

// runSQLWith runs 'coordctl sql ARGS' on rec with -w format and the
// environment env; it returns stdout and the exit code.
func runSQLWith(t *testing.T, rec *sqlRecorder, format string, env map[string]string, args ...string) (string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	f := cmdutil.NewFactory(cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	f.Global.WriteOut = format
	f.Getenv = func(k string) string { return env[k] }
	cmd := newSQLCmdRun(f, rec.run)
	cmd.SetArgs(append([]string{}, args...))
	cmd.SetOut(&errOut)
	cmd.SetErr(&errOut)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := cmd.ExecuteContext(ctx)
	return out.String(), cmdutil.ExitCode(err)
}

func TestSQLFlagsReachTheRequest(t *testing.T) {
	t.Parallel()
	pg := []string{"--driver", "postgres", "--dsn", "postgres://app@db/app"}
	conn := Config{Driver: "postgres", DSN: "postgres://app@db/app", Table: sqlfence.DefaultTable, Timeout: cmdutil.DefaultCommandTimeout}
	holder := map[string]string{"COORD_FENCING_TOKEN": "10", "COORD_LOCK_NAME": "jobs/report", "COORD_FENCING_SCOPE": "jobs/report/"}
	cases := map[string]struct {
		env  map[string]string
		args []string
		want Request
	}{
		"sql": {nil, append(append([]string{}, pg...), "--table", "fence2", "--command-timeout", "7s", "--scope", "s", "--token", "12", "-e", "A", "-e", "B"),
			Request{Config: Config{Driver: "postgres", DSN: "postgres://app@db/app", Table: "fence2", Timeout: 7 * time.Second},
				Op: Exec, Scope: "s", Token: 12, Statements: []string{"A", "B"}}},
		"a lock's environment": {holder, append(append([]string{}, pg...), "-e", "A"),
			Request{Config: conn, Op: Exec, Scope: "jobs/report/", Token: 10, Statements: []string{"A"}}},
		"COORD_FENCING_SCOPE before the lock's name": {map[string]string{"COORD_FENCING_TOKEN": "3", "COORD_FENCING_SCOPE": "other", "COORD_LOCK_NAME": "jobs/report"},
			append(append([]string{}, pg...), "-e", "A"),
			Request{Config: conn, Op: Exec, Scope: "other", Token: 3, Statements: []string{"A"}}},
		"an election's scope": {map[string]string{"COORD_FENCING_TOKEN": "4", "COORD_ELECTION": "leader", "COORD_FENCING_SCOPE": "leader/"}, append(append([]string{}, pg...), "-e", "A"),
			Request{Config: conn, Op: Exec, Scope: "leader/", Token: 4, Statements: []string{"A"}}},
		"flags before the environment": {holder, append(append([]string{}, pg...), "--scope", "mine", "--token", "11", "-e", "A"),
			Request{Config: conn, Op: Exec, Scope: "mine", Token: 11, Statements: []string{"A"}}},
		"fence": {holder, append([]string{"fence"}, pg...),
			Request{Config: conn, Op: Fence, Scope: "jobs/report/", Token: 10}},
		"floor": {holder, append([]string{"floor"}, pg...),
			Request{Config: conn, Op: Floor, Scope: "jobs/report/"}},
		"floor --all": {nil, append([]string{"floor", "--all"}, pg...),
			Request{Config: conn, Op: HighestFloor}},
		"floor --all in a lock's environment": {holder, append([]string{"floor", "--all"}, pg...),
			Request{Config: conn, Op: HighestFloor}},
		"the DSN from the environment": {map[string]string{EnvDSN: "postgres://app:secret@db/app", "COORD_FENCING_TOKEN": "10", "COORD_FENCING_SCOPE": "jobs/report/"},
			[]string{"--driver", "postgres", "-e", "A"},
			Request{Config: Config{Driver: "postgres", DSN: "postgres://app:secret@db/app", Table: sqlfence.DefaultTable, Timeout: cmdutil.DefaultCommandTimeout},
				Op: Exec, Scope: "jobs/report/", Token: 10, Statements: []string{"A"}}},
		"--dsn before the environment": {map[string]string{EnvDSN: "postgres://other@db/other", "COORD_FENCING_TOKEN": "10", "COORD_FENCING_SCOPE": "jobs/report/"},
			append(append([]string{}, pg...), "-e", "A"),
			Request{Config: conn, Op: Exec, Scope: "jobs/report/", Token: 10, Statements: []string{"A"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rec := &sqlRecorder{}
			_, code := runSQLWith(t, rec, cmdutil.FormatSimple, tc.env, tc.args...)
			require.Equal(t, cmdutil.ExitOK, code)
			require.Equal(t, []Request{tc.want}, rec.got)
		})
	}
}

// A lock's or an election's name is not a scope (it leaves --prefix out):
// without COORD_FENCING_SCOPE or --scope, sql is a usage error and runs
// nothing, whatever COORD_LOCK_NAME or COORD_ELECTION say.
func TestSQLNameIsNoScope(t *testing.T) {
	t.Parallel()
	pg := []string{"--driver", "postgres", "--dsn", "postgres://app@db/app", "-e", "A"}
	for _, env := range []map[string]string{
		{"COORD_FENCING_TOKEN": "10", "COORD_LOCK_NAME": "jobs/report"},
		{"COORD_FENCING_TOKEN": "10", "COORD_ELECTION": "leader"},
	} {
		rec := &sqlRecorder{}
		_, code := runSQLWith(t, rec, cmdutil.FormatSimple, env, pg...)
		require.Equal(t, cmdutil.ExitUsage, code, "%v", env)
		require.Empty(t, rec.got, "nothing ran")
	}
}

// What each answer of a run prints, and its exit code.
func TestSQLPrintsTheResult(t *testing.T) {
	t.Parallel()
	args := []string{"--driver", "sqlite", "--dsn", "app.db", "--scope", "jobs/ack", "--token", "1000", "-e", "UPDATE t SET n = n + 1"}
	lost := &OutcomeError{Scope: "jobs/ack", Token: 1000, Outcome: Unknown,
		Err: fmt.Errorf("postgres at db: commit outcome unknown: %w", sqlfence.ErrCommitUnknown)}
	outside := &OutcomeError{Scope: "jobs/ack", Token: 1000, Outcome: OutsideFence,
		Err: fmt.Errorf("sqlite at app.db: statements ran outside the fence: %w", sqlfence.ErrOutsideFence)}
	for _, tc := range []struct {
		name, format string
		res          Result
		err          error
		out          string
		code         int
	}{
		{"committed", cmdutil.FormatSimple, Result{Op: Exec, Scope: "jobs/ack", Token: 1000, Floor: 1000, RowsAffected: []int64{1}, Outcome: Committed}, nil,
			"ok scope=jobs/ack token=1000 floor=1000 rows_affected=1\n", cmdutil.ExitOK},
		{"committed json", cmdutil.FormatJSON, Result{Op: Exec, Scope: "jobs/ack", Token: 1000, Floor: 1000, RowsAffected: []int64{1}, Outcome: Committed}, nil,
			`{"scope":"jobs/ack","token":1000,"floor":1000,"rows_affected":[1],"outcome":"committed"}` + "\n", cmdutil.ExitOK},
		{"stale", cmdutil.FormatJSON, Result{}, fmt.Errorf("%w; nothing was committed", &fencing.StaleError{Scope: "jobs/ack", Token: 1000, Floor: 1001}), "", cmdutil.ExitStale},
		{"commit answer lost", cmdutil.FormatSimple, Result{}, lost, "", cmdutil.ExitUnknown},
		{"commit answer lost json", cmdutil.FormatJSON, Result{}, lost,
			`{"scope":"jobs/ack","token":1000,"outcome":"unknown","error":"postgres at db: commit outcome unknown: sqlfence: commit outcome unknown"}` + "\n", cmdutil.ExitUnknown},
		{"outside the fence json", cmdutil.FormatJSON, Result{}, outside,
			`{"scope":"jobs/ack","token":1000,"outcome":"outside_fence","error":"sqlite at app.db: statements ran outside the fence: sqlfence: statements ran outside the fenced transaction"}` + "\n", cmdutil.ExitUnknown},
		{"bad table", cmdutil.FormatSimple, Result{}, usagef("invalid --table %q", "x y"), "", cmdutil.ExitUsage},
		{"failed", cmdutil.FormatJSON, Result{}, errors.New("sqlite at app.db: nothing was committed: boom"), "", cmdutil.ExitError},
		{"interrupted", cmdutil.FormatSimple, Result{}, fmt.Errorf("%w: context canceled", ErrInterrupted), "", cmdutil.ExitError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &sqlRecorder{res: tc.res, err: tc.err}
			out, code := runSQLWith(t, rec, tc.format, nil, args...)
			require.Equal(t, tc.code, code)
			require.Equal(t, tc.out, out)
		})
	}
}

// The help never shows the DSN of the environment: its password would be
// printed.
func TestSQLHelpHidesTheDSNOfTheEnvironment(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--help"}, {"fence", "--help"}, {"floor", "--help"}} {
		var out, errOut bytes.Buffer
		f := cmdutil.NewFactory(cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		f.Getenv = func(k string) string { return map[string]string{EnvDSN: "postgres://app:s3cret@db/app"}[k] }
		cmd := newSQLCmdRun(f, (&sqlRecorder{}).run)
		cmd.SetArgs(args)
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		require.NoError(t, cmd.Execute())
		require.Contains(t, out.String(), "$"+EnvDSN, "%v", args)
		require.NotContains(t, out.String()+errOut.String(), "s3cret", "%v", args)
	}
}
