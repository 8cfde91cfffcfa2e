package e2e

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
)

// COORDCTL_RESOURCE_URL is the resource's address when --url is not given
// (internal/cli's TestResourceURLFromTheEnvironment); a child of the built
// 'coordctl lock' inherits it and writes with the lock's token and scope.
func TestResourceE2EURLInheritedByALockCommand(t *testing.T) {
	t.Parallel()
	res, err := fencing.NewResource(fencing.ResourceConfig{DataDir: t.TempDir()})
	require.NoError(t, err)
	rs := httptest.NewServer(res)
	t.Cleanup(func() {
		rs.Close()
		res.Close()
	})
	url := rs.URL

	etcd := etcdtest.Start(t)
	bin := coordctlBinary(t)
	code, out, _ := runBinary(t, []string{"COORDCTL_RESOURCE_URL=" + url},
		"--endpoints", etcd.Endpoints()[0], "lock", "env-url", "--", bin, "resource", "put", "child", "inherited")
	require.Equal(t, exitOK, code, out)
	e, err := (&fencing.Client{BaseURL: url}).Get(context.Background(), "child")
	require.NoError(t, err)
	require.Equal(t, "inherited", e.Value)
	require.Equal(t, "env-url", e.Scope, "token and scope from the lock, the URL from the inherited variable")
}
