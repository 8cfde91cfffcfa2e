package root

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	resource "github.com/coordkit/coordkit/internal/cmd/resource"
)

// 'resource get' printed the value and a newline, so what put wrote and
// get read differed.
func TestResourceGetRoundTripsTheValue(t *testing.T) {
	url := startTestResource(t)
	ctx := context.Background()
	for _, value := range []string{"v", "two\nlines\n", "no newline at the end", "  spaced  ", "ünïcode\t"} {
		var errOut bytes.Buffer
		out := &bytes.Buffer{}
		code := run(ctx, []string{"resource", "put", "k", "-", "--token", "5", "--scope", "s", "--url", url},
			cmdutil.IOStreams{In: bytes.NewReader([]byte(value)), Out: out, ErrOut: &errOut}, func(string) string { return "" })
		require.Equal(t, cmdutil.ExitOK, code, errOut.String())
		got := runInProcess(ctx, nil, "resource", "get", "k", "--url", url)
		require.Equal(t, cmdutil.ExitOK, got.Code, got.Stderr)
		require.Equal(t, value, got.Stdout, "get prints exactly what put wrote")
	}
}

// COORDCTL_RESOURCE_URL is the resource's address when --url is not given,
// as COORDCTL_ENDPOINTS is etcd's.
func TestResourceURLFromTheEnvironment(t *testing.T) {
	url := startTestResource(t)
	ctx := context.Background()
	env := map[string]string{resource.EnvURL: url}
	res := runInProcess(ctx, env, "resource", "put", "k", "from-env", "--token", "3", "--scope", "s")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	res = runInProcess(ctx, env, "resource", "get", "k")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	require.Equal(t, "from-env", res.Stdout)
	// --url still wins.
	res = runInProcess(ctx, env, "resource", "get", "k", "--url", "http://127.0.0.1:1")
	require.Equal(t, cmdutil.ExitError, res.Code)
	// That a child of the built 'coordctl lock' inherits it is
	// TestResourceE2EURLInheritedByALockCommand in internal/cmd/e2e.
}

// 'repair -w json' printed "Scope","Token","Floor" in refence, and a dry
// run that found damage exited 2 as if the flags were wrong. It exits 1
// now: the log is still damaged and the resource will not start. The
// damaged fence is not trusted: nothing is re-fenced from it, and the plan
// says a bound is needed, at least the highest floor kept.
func TestResourceRepairJSONAndExitCode(t *testing.T) {
	dir, _, _ := damagedResourceLog(t)
	ctx := context.Background()
	dry := runInProcess(ctx, nil, "resource", "repair", "--data-dir", dir, "-w", "json")
	require.Equal(t, cmdutil.ExitError, dry.Code, "damage found, not applied: %s", dry.Stderr)
	require.Contains(t, dry.Stderr, "--yes")
	var plan map[string]any
	require.NoError(t, json.Unmarshal([]byte(dry.Stdout), &plan), dry.Stdout)
	require.Equal(t, []any{}, plan["refence"])
	require.Equal(t, true, plan["needs_bound"])
	require.Equal(t, 5.0, plan["highest_kept"])
	require.Equal(t, false, plan["applied"])

	bounded := runInProcess(ctx, nil, "resource", "repair", "--data-dir", dir, "-w", "json", "--at-least", "1000")
	require.Equal(t, cmdutil.ExitError, bounded.Code, bounded.Stderr)
	require.NoError(t, json.Unmarshal([]byte(bounded.Stdout), &plan), bounded.Stdout)
	require.Equal(t, 1000.0, plan["bound"])
	require.Equal(t, false, plan["applied"])
}
