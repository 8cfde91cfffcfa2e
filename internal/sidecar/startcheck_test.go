package sidecar

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckTokenFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	cases := []struct {
		name string
		path string
		ok   bool
	}{
		{"new file in a writable dir", filepath.Join(dir, "token"), true},
		{"existing file", file, true},
		{"missing directory", filepath.Join(dir, "nope", "token"), false},
		{"parent is a file", filepath.Join(file, "token"), false},
		{"path is a directory", dir, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckTokenFile(tc.path)
			if tc.ok {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, ErrTokenFile)
			}
			// Nothing is left behind.
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, entries, 1, "only the pre-existing file")
		})
	}
}

func TestCheckCommand(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "script")
	require.NoError(t, os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644))
	require.NoError(t, CheckCommand([]string{"sh", "-c", "true"}))
	err := CheckCommand([]string{"coordkit-no-such-command"})
	require.ErrorIs(t, err, ErrCommand)
	require.ErrorIs(t, err, exec.ErrNotFound)
	err = CheckCommand([]string{filepath.Join(dir, "missing")})
	require.ErrorIs(t, err, fs.ErrNotExist)
	err = CheckCommand([]string{notExec})
	require.ErrorIs(t, err, ErrCommand)
	require.ErrorIs(t, err, fs.ErrPermission)
	require.ErrorIs(t, CheckCommand(nil), ErrCommand)
}
