package e2e

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
)

// COORDCTL_RESOURCE_URL is the resource's address when --url is not given
// (internal/cmd/root's TestResourceURLFromTheEnvironment); a child of the built
// 'coordctl lock' inherits it and writes, with the lock's token and scope,
// to a 'coordctl resource serve'.
func TestResourceE2EURLInheritedByALockCommand(t *testing.T) {
	t.Parallel()
	bin := coordctlBinary(t)
	url := startResourceProcess(t, bin, t.TempDir()).url
	etcd := etcdtest.Start(t)
	code, out, _ := runBinary(t, []string{"COORDCTL_RESOURCE_URL=" + url},
		"--endpoints", etcd.Endpoints()[0], "lock", "env-url", "--", bin, "resource", "put", "child", "inherited")
	require.Equal(t, exitOK, code, out)
	e, err := (&fencing.Client{BaseURL: url}).Get(context.Background(), "child")
	require.NoError(t, err)
	require.Equal(t, "inherited", e.Value)
	require.Equal(t, "env-url/", e.Scope, "token and scope from the lock, the URL from the inherited variable")
}
