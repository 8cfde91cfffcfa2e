package cli

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every bench command's Long help comes from its help/NAME.txt, and every
// file there is some command's help.
func TestBenchHelpFiles(t *testing.T) {
	t.Parallel()
	bench := newBenchCmd(newFactory(ioStreams{}))
	longs := map[string]bool{}
	for _, c := range append(bench.Commands(), bench) {
		require.NotEmpty(t, c.Long, c.CommandPath())
		require.False(t, strings.HasSuffix(c.Long, "\n"), "%s: the file's last newline is not part of the help", c.CommandPath())
		longs[c.Long] = true
	}
	files, err := fs.Glob(benchHelpFiles, "help/*.txt")
	require.NoError(t, err)
	require.Len(t, files, len(bench.Commands())+1, "one file per bench command and one for bench")
	for _, name := range files {
		b, err := benchHelpFiles.ReadFile(name)
		require.NoError(t, err)
		require.True(t, longs[strings.TrimSuffix(string(b), "\n")], "%s is no command's help", name)
	}
	require.Contains(t, benchHelp("bench_lock"), "uncontended_p50_ms")
	require.Empty(t, benchHelp("no_such_command"))
}
