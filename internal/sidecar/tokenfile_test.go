package sidecar

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSidecarTokenFileWriteReplaceRemove(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "token")

	until := time.Now().Add(time.Minute)
	require.NoError(t, WriteTokenFile(path, 41, until))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "41\n", string(b))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
	require.WithinDuration(t, until, fi.ModTime(), time.Millisecond, "it appears stamped valid until until")

	require.NoError(t, WriteTokenFile(path, 1234, until))
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "1234\n", string(b))

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary files left behind")

	require.NoError(t, RemoveTokenFile(path))
	_, err = os.Stat(path)
	require.True(t, os.IsNotExist(err))
	require.NoError(t, RemoveTokenFile(path), "removing a missing file is fine")
}

func TestSidecarTokenFileErrors(t *testing.T) {
	dir := t.TempDir()
	err := WriteTokenFile(filepath.Join(dir, "missing", "token"), 1, time.Now())
	require.Error(t, err)
	// A directory in the way: the rename fails and the temp file is cleaned up.
	path := filepath.Join(dir, "tok")
	require.NoError(t, os.Mkdir(path, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(path, "x"), nil, 0o644))
	require.Error(t, WriteTokenFile(path, 1, time.Now()))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
}
