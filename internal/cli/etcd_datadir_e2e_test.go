package cli

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A second coordctl etcd on a data directory in use exits 1 at once, saying
// so, instead of waiting for ever on etcd's database lock (issue 11, #1).
func TestEtcdE2EDataDirInUse(t *testing.T) {
	dir := t.TempDir()
	first := startCoordctl(t, nil, "etcd", "-w", "json", "--data-dir", dir,
		"--listen-client-urls", "http://"+freeAddr(t), "--listen-peer-urls", "http://"+freeAddr(t))
	var ready struct{ Endpoints []string }
	require.NoError(t, json.Unmarshal([]byte(first.line(t)), &ready), first.stderr.String())

	second := startCoordctl(t, nil, "etcd", "--data-dir", dir,
		"--listen-client-urls", "http://"+freeAddr(t), "--listen-peer-urls", "http://"+freeAddr(t))
	require.Equal(t, exitError, second.wait(t, 60*time.Second))
	require.Contains(t, second.stderr.String(), "data dir "+dir+" is in use by another process")
}
