package root

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

func TestResourceFloorsCommand(t *testing.T) {
	r, err := fencing.NewResource(fencing.ResourceConfig{DataDir: t.TempDir()})
	require.NoError(t, err)
	defer r.Close()
	srv := httptest.NewServer(r)
	defer srv.Close()
	ctx := context.Background()
	c := &fencing.Client{BaseURL: srv.URL}
	_, err = c.Fence(ctx, 90, "jobs/x")
	require.NoError(t, err)
	_, err = c.Fence(ctx, 1234, "jobs/y")
	require.NoError(t, err)

	res := runInProcess(ctx, nil, "resource", "floors", "--url", srv.URL)
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	require.Equal(t, "scope=jobs/x floor=90\nscope=jobs/y floor=1234\nhighest=1234 scope=jobs/y\n", res.Stdout)
	res = runInProcess(ctx, nil, "resource", "floors", "--url", srv.URL, "-w", "json")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	var out fencing.FloorsResult
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &out))
	require.Equal(t, fencing.Token(1234), out.Highest)
	require.Equal(t, "jobs/y", out.HighestScope)
	require.True(t, strings.HasSuffix(res.Stdout, "\n"))
}
