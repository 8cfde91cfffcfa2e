package root

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

// Untrusted event files: a line over 64 KiB and a NUL in a node name are
// usage errors naming the line (exit 2); a byte order mark is stripped.
func TestLamportTraceCmdBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	long := write("long", "A local\nA local #"+strings.Repeat("x", 70<<10)+"\n")
	res := runInProcess(context.Background(), nil, "lamport", "trace", long)
	require.Equal(t, cmdutil.ExitUsage, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "line 2: lamport: line too long")
	require.NotContains(t, res.Stderr, "bufio")

	nul := write("nul", "A\x00 local\n")
	res = runInProcess(context.Background(), nil, "lamport", "trace", nul)
	require.Equal(t, cmdutil.ExitUsage, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "line 1")
	require.Contains(t, res.Stderr, "control character")

	bom := write("bom", "\ufeffA send B\nB recv A\n")
	res = runInProcess(context.Background(), nil, "lamport", "trace", bom, "-w", "json")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, `"node":"A"`)
	require.NotContains(t, res.Stdout, `\ufeff`)
}
