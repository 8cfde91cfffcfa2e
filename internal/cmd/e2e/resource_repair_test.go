package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
)

// noEtcd keeps an inherited COORDCTL_ENDPOINTS from naming an etcd.
var noEtcd = []string{"COORDCTL_ENDPOINTS="}

// etcdRevision is etcd's current revision.
func etcdRevision(t *testing.T, cli *clientv3.Client) int64 {
	t.Helper()
	resp, err := cli.Get(context.Background(), "e2e/revision", clientv3.WithCountOnly())
	require.NoError(t, err)
	return resp.Header.Revision
}

// Issue 31: one flipped bit turned the last record of a resource's log, a
// fence at 14, into a fence at 10, and repair let the floor fall to 13. Now
// 'resource repair --yes' without a bound refuses and changes nothing; with
// --endpoints it raises every floor to etcd's current revision, and the
// restarted 'resource serve' refuses the stale tokens in the damaged scope
// and in a scope the log never named, while the next real holder is admitted.
func TestResourceE2ERepairRaisesFloorsToEtcdsRevision(t *testing.T) {
	t.Parallel()
	bin := coordctlBinary(t)
	etcd, cli := etcdtest.StartWithClient(t)
	endpoint := etcd.Endpoints()[0]
	dir := t.TempDir()
	srv := startResourceProcess(t, bin, dir)
	c := &fencing.Client{BaseURL: srv.url}
	ctx := testCtx(t)
	_, err := c.Put(ctx, "config", "v1", 5, "f")
	require.NoError(t, err)
	for _, tok := range []fencing.Token{13, 14} {
		_, err := c.Fence(ctx, tok, "f")
		require.NoError(t, err)
	}
	srv.stop(t)
	for i := range 20 { // etcd's revision passes the floors, as real tokens would have
		_, err := cli.Put(ctx, "e2e/filler", strconv.Itoa(i))
		require.NoError(t, err)
	}
	rev := etcdRevision(t, cli)
	require.Greater(t, rev, int64(14))

	path := filepath.Join(dir, "resource.log")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	i := bytes.LastIndex(data, []byte(`"token":14`))
	require.Positive(t, i)
	data[i+len(`"token":1`)] ^= 0x04 // 14 reads as 10
	require.NoError(t, os.WriteFile(path, data, 0o644))

	code, out, _ := runBinary(t, noEtcd, "resource", "repair", "--data-dir", dir, "--yes")
	require.Equal(t, exitError, code, out)
	require.Contains(t, out, "--endpoints HOST:PORT")
	require.Contains(t, out, "--at-least N")
	after, _ := os.ReadFile(path)
	require.Equal(t, data, after, "a repair without a bound changed the log")

	code, out, _ = runBinary(t, noEtcd, "resource", "repair", "--data-dir", dir, "--yes", "--endpoints", endpoint)
	require.Equal(t, exitOK, code, out)
	m := regexp.MustCompile(`to the bound (\d+)`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	bound, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)
	require.GreaterOrEqual(t, bound, rev, "the bound is etcd's current revision")

	srv = startResourceProcess(t, bin, dir)
	for _, stale := range []struct {
		scope string
		tok   int64
	}{{"f", 13}, {"f", 14}, {"f", rev - 1}, {"never/named", rev - 1}} {
		code, out, _ := runBinary(t, noEtcd, "resource", "put", "config", "late", "--url", srv.url,
			"--token", strconv.FormatInt(stale.tok, 10), "--scope", stale.scope)
		require.Equal(t, exitStale, code, "token %d in %q after the repair: %s", stale.tok, stale.scope, out)
	}
	code, out, _ = runBinary(t, []string{"COORDCTL_RESOURCE_URL=" + srv.url}, "--endpoints", endpoint,
		"lock", "e2e/repaired", "--", bin, "resource", "put", "config", "next-holder", "--scope", "never/named")
	require.Equal(t, exitOK, code, "a holder granted after the repair: %s", out)
	e, err := (&fencing.Client{BaseURL: srv.url}).Get(ctx, "config")
	require.NoError(t, err)
	require.Equal(t, "next-holder", e.Value)
	require.Greater(t, int64(e.Token), bound)
}

// Issue 31: after a restore without --bump-revision a gap under 1,000
// revisions got a bare "stale token … floor is …". A floor above etcd's
// current revision is one etcd never granted (here a fence by hand 50
// revisions ahead, as a restore leaves it): a holder under 'coordctl lock'
// is refused, and the refusal, which its coordctl child prints with the
// lock's etcd (COORDCTL_ENDPOINTS), names the restore and the commands.
func TestResourceE2ERestoreHintWhateverTheGap(t *testing.T) {
	t.Parallel()
	bin := coordctlBinary(t)
	etcd, cli := etcdtest.StartWithClient(t)
	endpoint := etcd.Endpoints()[0]
	srv := startResourceProcess(t, bin, t.TempDir())
	env := []string{"COORDCTL_RESOURCE_URL=" + srv.url}
	const name = "e2e/restored"

	// The scope a holder of the lock fences, as the lock tells its command.
	code, out, _ := runBinary(t, env, "--endpoints", endpoint, "lock", name, "--", "sh", "-c", `printf %s "$COORD_FENCING_SCOPE"`)
	require.Equal(t, exitOK, code, out)
	scope := out
	floor := etcdRevision(t, cli) + 50
	code, out, _ = runBinary(t, noEtcd, "resource", "fence", "--url", srv.url, "--token", strconv.FormatInt(floor, 10), "--scope", scope)
	require.Equal(t, exitOK, code, out)

	code, out, _ = runBinary(t, env, "--endpoints", endpoint, "lock", name, "--", bin, "resource", "put", "config", "v")
	require.Equal(t, exitStale, code, out)
	m := regexp.MustCompile(`stale token (\d+)`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	tok, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)
	require.Less(t, floor-tok, int64(1000), "a small gap")
	t.Logf("the refusal: %s", out)
	for _, want := range []string{
		fmt.Sprintf("floor %d is above etcd's current revision", floor),
		"restored",
		"etcdutl snapshot restore --bump-revision N --mark-compacted",
		"coordctl resource floors",
	} {
		require.Contains(t, out, want)
	}

	// Without an etcd to ask, the same small gap gets no guess.
	code, out, _ = runBinary(t, noEtcd, "resource", "put", "config", "v", "--url", srv.url,
		"--token", strconv.FormatInt(tok, 10), "--scope", scope)
	require.Equal(t, exitStale, code, out)
	require.False(t, strings.Contains(out, "bump-revision"), out)
}
