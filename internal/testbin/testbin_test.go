package testbin

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A COORDKIT_TEST_BIN without both binaries is an error naming what is
// missing, never a silent build; with both it is used as it is.
func TestLocateChecksThePrebuiltDirectory(t *testing.T) {
	d := t.TempDir()
	t.Setenv(EnvDir, d)
	_, err := locate()
	require.ErrorContains(t, err, filepath.Join(d, Coordctl))

	require.NoError(t, os.WriteFile(filepath.Join(d, Coordctl), nil, 0o755))
	_, err = locate()
	require.ErrorContains(t, err, filepath.Join(d, Sidecar))

	require.NoError(t, os.WriteFile(filepath.Join(d, Sidecar), nil, 0o755))
	got, err := locate()
	require.NoError(t, err)
	require.Equal(t, d, got)
	require.False(t, built, "a prebuilt directory is not Remove's to delete")
}
