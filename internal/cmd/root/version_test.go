package root

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/buildinfo"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

func TestVersionJSONAndSimple(t *testing.T) {
	ctx := context.Background()
	res := runInProcess(ctx, nil, "version", "-w", "json")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	var got buildinfo.Info
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got), res.Stdout)
	require.Equal(t, "github.com/coordkit/coordkit", got.Module)
	require.NotEmpty(t, got.Version)
	require.NotEmpty(t, got.GoVersion)

	simple := runInProcess(ctx, nil, "version")
	require.Equal(t, cmdutil.ExitOK, simple.Code, simple.Stderr)
	require.Contains(t, simple.Stdout, "coordctl "+got.Version+"\n")
	require.Contains(t, simple.Stdout, "etcd server: ")

	bad := runInProcess(ctx, nil, "version", "extra")
	require.Equal(t, cmdutil.ExitUsage, bad.Code)
}
