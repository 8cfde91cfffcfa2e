package scenariocmd

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/scenarios"
	"github.com/coordkit/coordkit/scenarios/report"
)

// fakeClaims declares a safety claim "a" and a timing claim "b".
var fakeClaims = []scenarios.Claim{{ID: "a", Kind: scenarios.Safety, Text: "claim a"}, {ID: "b", Kind: scenarios.Timing, Text: "claim b"}}

func mustRegister(t *testing.T, r *scenarios.Registry, s scenarios.Scenario) {
	t.Helper()
	require.NoError(t, r.Register(s))
}

// fakeRegistry has one passing scenario and one whose timing claim fails.
func fakeRegistry(t *testing.T) *scenarios.Registry {
	r := scenarios.NewRegistry()
	mk := func(name string, holds bool) scenarios.Scenario {
		return scenarios.Scenario{Name: name, Summary: name + " summary", Claims: fakeClaims,
			Run: func(ctx context.Context, env scenarios.Env) (*report.Report, error) {
				env.Progressf("working on %s", name)
				rep := report.New(name, "")
				rep.CheckID("a", "1", "1", true)
				rep.CheckID("b", "2", "3", holds)
				rep.Metric("m", 1, "")
				return rep, nil
			}}
	}
	mustRegister(t, r, mk("good", true))
	mustRegister(t, r, mk("bad", false))
	return r
}

func TestScenarioCmdRunAllExitCodes(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name     string
		opts     scenarioRunOptions
		wantCode int
		wantN    int
	}{
		{"one passing", scenarioRunOptions{Name: "good"}, cmdutil.ExitOK, 1},
		{"one failing (a timing claim: still exit 1)", scenarioRunOptions{Name: "bad"}, cmdutil.ExitError, 1},
		{"all", scenarioRunOptions{All: true}, cmdutil.ExitError, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			f := cmdutil.NewFactory(cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
			f.Global.WriteOut = cmdutil.FormatJSON
			opts := tc.opts
			opts.Scale, opts.Seed, opts.Registry = "small", 9, fakeRegistry(t)
			opts.Report = filepath.Join(t.TempDir(), "all.html")
			err := runScenarioRun(ctx, f, &opts)
			assert.Equal(t, tc.wantCode, cmdutil.ExitCode(err), "err %v", err)
			assert.Contains(t, errOut.String(), "working on")
			var reps []report.Report
			if opts.All {
				require.NoError(t, json.Unmarshal(out.Bytes(), &reps), out.String())
			} else {
				var one report.Report
				require.NoError(t, json.Unmarshal(out.Bytes(), &one), out.String())
				reps = append(reps, one)
			}
			require.Len(t, reps, tc.wantN)
			for _, r := range reps {
				assert.Equal(t, r.Name == "good", r.Passed)
				require.Len(t, r.Claims, 2)
				assert.Equal(t, report.Claim{ID: "b", Kind: "timing", Claim: "claim b", Expected: "2", Observed: "3", Holds: r.Name == "good"}, r.Claims[1])
				assert.Equal(t, int64(9), r.Seed)
			}
			b, err := os.ReadFile(opts.Report)
			require.NoError(t, err)
			assert.Contains(t, string(b), "<section id=\"s-"+reps[0].Name+"\">")
		})
	}
}

func TestScenarioCmdBrokenScenarioExits1(t *testing.T) {
	t.Parallel()
	r := scenarios.NewRegistry()
	mustRegister(t, r, scenarios.Scenario{Name: "broken", Summary: "s", Claims: fakeClaims,
		Run: func(context.Context, scenarios.Env) (*report.Report, error) { return nil, os.ErrPermission }})
	var out, errOut bytes.Buffer
	f := cmdutil.NewFactory(cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	f.Global.WriteOut = cmdutil.FormatSimple
	err := runScenarioRun(context.Background(), f, &scenarioRunOptions{Name: "broken", Scale: "small", Registry: r})
	assert.Equal(t, cmdutil.ExitError, cmdutil.ExitCode(err))
	assert.Contains(t, out.String(), "could not be carried out")
	assert.Contains(t, errOut.String(), "permission denied")
}

func TestScenarioCmdInterrupted(t *testing.T) {
	t.Parallel()
	r := scenarios.NewRegistry()
	mustRegister(t, r, scenarios.Scenario{Name: "slow", Summary: "s", Claims: fakeClaims,
		Run: func(ctx context.Context, _ scenarios.Env) (*report.Report, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}})
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut bytes.Buffer
	f := cmdutil.NewFactory(cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	f.Global.WriteOut = cmdutil.FormatJSON
	done := make(chan error, 1)
	go func() { done <- runScenarioRun(ctx, f, &scenarioRunOptions{Name: "slow", Scale: "small", Registry: r}) }()
	cancel()
	select {
	case err := <-done:
		assert.Equal(t, cmdutil.ExitError, cmdutil.ExitCode(err), "an interrupted run is not a pass")
		assert.Contains(t, err.Error(), "interrupted")
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after cancel")
	}
	assert.Empty(t, out.String())
}
