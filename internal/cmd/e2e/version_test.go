package e2e

import (
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/buildinfo"
)

// A test binary's build information lists no dependencies; the built
// coordctl's does, so the etcd versions are checked there.
func TestVersionOfTheBuiltBinaryNamesEtcd(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(coordctlBinary(t), "version", "-w", "json").Output()
	require.NoError(t, err)
	var got buildinfo.Info
	require.NoError(t, json.Unmarshal(out, &got), string(out))
	require.Regexp(t, `^v3\.`, got.EtcdClient, "the etcd client is linked into coordctl")
	require.Regexp(t, `^v3\.`, got.EtcdServer, "the embedded etcd server is linked into coordctl")
}
