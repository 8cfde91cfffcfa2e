package root

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

// resource serve on a taken port fails before it creates its data dir.
func TestResourceServeBusyPortCreatesNothing(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	dir := filepath.Join(t.TempDir(), "res")
	res := runInProcess(context.Background(), nil, "resource", "serve", "--listen", busy.Addr().String(), "--data-dir", dir)
	require.Equal(t, cmdutil.ExitError, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "address already in use")
	_, err = os.Stat(dir)
	require.ErrorIs(t, err, os.ErrNotExist, "the data dir must not be created")
}
