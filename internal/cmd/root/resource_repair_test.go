package root

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

// damagedResourceLog writes a resource log with a put (token 5) and a
// fence at 900 on scope "s", then flips a bit of the fence record in place;
// it returns the data dir, the log's path and its damaged bytes.
func damagedResourceLog(t *testing.T) (dir, path string, data []byte) {
	t.Helper()
	dir = t.TempDir()
	res, err := fencing.NewResource(fencing.ResourceConfig{DataDir: dir})
	require.NoError(t, err)
	srv := httptest.NewServer(res)
	c := &fencing.Client{BaseURL: srv.URL, HTTP: srv.Client()}
	ctx := context.Background()
	_, err = c.Put(ctx, "a", "one", 5, "s")
	require.NoError(t, err)
	_, err = c.Fence(ctx, 900, "s")
	require.NoError(t, err)
	srv.Close()
	require.NoError(t, res.Close())
	path = filepath.Join(dir, "resource.log")
	data, err = os.ReadFile(path)
	require.NoError(t, err)
	i := bytes.LastIndex(data, []byte(`"time":"`)) + len(`"time":"`) + 2
	data[i] ^= 0x01
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return dir, path, data
}

// TestResourceRepairCmd: a fence at 900 damaged in place; the resource
// refuses to start, repair without --yes lists it and exits 1 naming the
// bound it needs; --yes without a bound refuses (exit 1, the log unchanged);
// --yes --at-least 1000 drops it and every floor, of "s" and of a scope the
// log never named, is 1000.
func TestResourceRepairCmd(t *testing.T) {
	t.Parallel()
	dir, path, data := damagedResourceLog(t)
	ctx := context.Background()

	serve := runInProcess(ctx, nil, "resource", "serve", "--listen", "127.0.0.1:0", "--data-dir", dir)
	require.Equal(t, cmdutil.ExitError, serve.Code, serve.Stderr)
	require.Contains(t, serve.Stderr, "coordctl resource repair --data-dir "+dir)

	dry := runInProcess(ctx, nil, "resource", "repair", "--data-dir", dir)
	require.Equal(t, cmdutil.ExitError, dry.Code, dry.Stderr)
	require.Contains(t, dry.Stdout, `type=fence scope="s" token=900 (damaged`)
	require.Contains(t, dry.Stdout, "untrusted")
	require.Contains(t, dry.Stdout, "--at-least N")
	after, _ := os.ReadFile(path)
	require.Equal(t, data, after, "a dry run changed the log")

	refused := runInProcess(ctx, nil, "resource", "repair", "--data-dir", dir, "--yes")
	require.Equal(t, cmdutil.ExitError, refused.Code, refused.Stderr)
	require.Contains(t, refused.Stderr, "nothing changed")
	require.Contains(t, refused.Stderr, "--endpoints HOST:PORT")
	require.Contains(t, refused.Stderr, "--at-least N")
	after, _ = os.ReadFile(path)
	require.Equal(t, data, after, "a repair without a bound changed the log")

	low := runInProcess(ctx, nil, "resource", "repair", "--data-dir", dir, "--yes", "--at-least", "4")
	require.Equal(t, cmdutil.ExitError, low.Code, low.Stderr)
	require.Contains(t, low.Stderr, "below the floor 5")
	bad := runInProcess(ctx, nil, "resource", "repair", "--data-dir", dir, "--yes", "--at-least", "x")
	require.Equal(t, cmdutil.ExitUsage, bad.Code, bad.Stderr)

	apply := runInProcess(ctx, nil, "resource", "repair", "--data-dir", dir, "--yes", "--at-least", "1000")
	require.Equal(t, cmdutil.ExitOK, apply.Code, apply.Stderr)
	require.Contains(t, apply.Stdout, "to the bound 1000")
	require.Contains(t, apply.Stdout, "repaired")

	res, err := fencing.NewResource(fencing.ResourceConfig{DataDir: dir})
	require.NoError(t, err)
	require.Equal(t, fencing.Token(1000), res.Floor("s"))
	require.Equal(t, fencing.Token(1000), res.Floor("never/named"))
	require.NoError(t, res.Close())

	again := runInProcess(ctx, nil, "resource", "repair", "--data-dir", dir)
	require.Equal(t, cmdutil.ExitOK, again.Code, again.Stderr)
}

func TestResourceCmdTokenWithLeadingZero(t *testing.T) {
	t.Parallel()
	res := runInProcess(context.Background(), nil, "resource", "put", "k", "v", "--token", "05", "--scope", "s", "--url", "http://127.0.0.1:1")
	require.Equal(t, cmdutil.ExitUsage, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "leading zeros")
}
