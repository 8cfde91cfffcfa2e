// Package guardtest gives tests a token file laid out as the kubelet lays
// out a mounted Kubernetes Secret, to rotate as a Secret is rotated.
package guardtest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// SecretVolume is a directory as the kubelet lays out a mounted Secret:
// token -> ..data/token, ..data -> a version's directory, swapped
// atomically (a rename of a new symlink over it) when the Secret changes.
type SecretVolume struct{ dir string }

// NewSecretVolume returns a volume whose token file holds token.
func NewSecretVolume(t testing.TB, token string) *SecretVolume {
	t.Helper()
	v := &SecretVolume{dir: t.TempDir()}
	v.Rotate(t, token)
	require.NoError(t, os.Symlink("..data/token", v.Path()))
	return v
}

// Path is the token file's path, what a program is given.
func (v *SecretVolume) Path() string { return filepath.Join(v.dir, "token") }

// Rotate writes a new version holding token and swaps ..data to it.
func (v *SecretVolume) Rotate(t testing.TB, token string) {
	t.Helper()
	ver, err := os.MkdirTemp(v.dir, "..version_")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(ver, "token"), []byte(token+"\n"), 0o600))
	tmp := filepath.Join(v.dir, "..data_tmp")
	require.NoError(t, os.Symlink(filepath.Base(ver), tmp))
	require.NoError(t, os.Rename(tmp, filepath.Join(v.dir, "..data")))
}
