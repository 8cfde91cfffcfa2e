//go:build unix

package etcdembed_test

import (
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/etcdembed"
)

// TestStableURLClaimsItsPort: a stable pick never repeats within a process,
// and its port is locked for the life of the process, so another process's
// pick skips it even while the port is not bound (a stopped member's). A
// second open file description stands for the other process: flock locks
// belong to the open file, not the process.
func TestStableURLClaimsItsPort(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	var last string
	for range 50 {
		raw, err := etcdembed.StableURL()
		require.NoError(t, err)
		u, err := url.Parse(raw)
		require.NoError(t, err)
		require.False(t, seen[u.Port()], "port %s picked twice", u.Port())
		seen[u.Port()] = true
		last = u.Port()
	}
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "coordkit-stable-ports", last), os.O_RDWR, 0)
	require.NoError(t, err, "the pick's lock file")
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	require.True(t, errors.Is(err, syscall.EWOULDBLOCK), "the port's lock is held: %v", err)
}
