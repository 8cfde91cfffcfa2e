package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
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

func TestScenarioCmdList(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res := runInProcess(ctx, nil, "scenario", "list", "-w", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var items []map[string]string
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &items))
	require.NotEmpty(t, items)
	names := map[string]bool{}
	for _, it := range items {
		assert.Len(t, it, 2, "exactly name and summary")
		assert.NotEmpty(t, it["summary"])
		names[it["name"]] = true
	}
	assert.True(t, names["lamport-clocks"])

	res = runInProcess(ctx, nil, "scenario", "list")
	require.Equal(t, 0, res.Code)
	assert.Contains(t, res.Stdout, "lamport-clocks")
}

func TestScenarioCmdRunLamportClocks(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	page := filepath.Join(t.TempDir(), "r.html")
	res := runInProcess(ctx, nil, "scenario", "run", "lamport-clocks", "--seed", "3", "--report", page, "-w", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var got struct {
		Name   string `json:"name"`
		Passed bool   `json:"passed"`
		Seed   int64  `json:"seed"`
		Claims []struct {
			Claim, Expected, Observed string
			Holds                     bool
		} `json:"claims"`
		Metrics map[string]float64 `json:"metrics"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got), res.Stdout)
	assert.Equal(t, "lamport-clocks", got.Name)
	assert.True(t, got.Passed)
	assert.Equal(t, int64(3), got.Seed)
	assert.GreaterOrEqual(t, len(got.Claims), 2)
	assert.Contains(t, got.Metrics, "order_violations")
	assert.Contains(t, res.Stderr, "scenario lamport-clocks: PASS")
	b, err := os.ReadFile(page)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(b, []byte("<!DOCTYPE html>")))
	assert.NotContains(t, string(b), "<script")

	res = runInProcess(ctx, nil, "scenario", "run", "lamport-clocks")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.True(t, strings.HasPrefix(res.Stdout, "PASS  lamport-clocks\n"), res.Stdout)
	assert.Contains(t, res.Stdout, "(3,B)")
}

func TestScenarioCmdUsage(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown name lists names", []string{"scenario", "run", "no-such"}, "scenarios are: "},
		{"no name", []string{"scenario", "run"}, "give a scenario name or --all"},
		{"name and all", []string{"scenario", "run", "lamport-clocks", "--all"}, "not both"},
		{"bad scale", []string{"scenario", "run", "lamport-clocks", "--scale", "huge"}, "invalid --scale"},
		{"bad report", []string{"scenario", "run", "lamport-clocks", "--report", "x.pdf"}, "invalid --report"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runInProcess(ctx, nil, tc.args...)
			assert.Equal(t, cmdutil.ExitUsage, res.Code)
			assert.Contains(t, res.Stderr, tc.want)
			if tc.name == "unknown name lists names" {
				assert.Contains(t, res.Stderr, "lamport-clocks")
			}
		})
	}
}

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

// --redis with an address nobody answers on: the scenario fails (exit 1)
// naming it, without starting etcd.
func TestScenarioCmdRedisUnreachable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	res := runInProcess(context.Background(), nil, "scenario", "run", "lock-without-fencing", "--redis", addr)
	require.Equal(t, cmdutil.ExitError, res.Code, res.Stderr)
	assert.Contains(t, res.Stderr, addr)
	assert.Contains(t, res.Stdout+res.Stderr, "did not answer")
}
