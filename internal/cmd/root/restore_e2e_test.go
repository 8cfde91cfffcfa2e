package root

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	snapshotsave "go.etcd.io/etcd/client/v3/snapshot"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/etcdembed"
	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
	"github.com/coordkit/coordkit/lock"
)

// TestRestoreNeedsARevisionBump does what docs/operations.md tells an
// operator to do, with etcd's own snapshot code: a snapshot, a floor that
// passes the snapshot's revision, a restore. Restored as it was, etcd hands
// the next holder a token below the floor (refused, and the message names
// the likely cause and the doc); restored with --bump-revision above the
// highest floor ('coordctl resource floors'), the next holder is admitted.
func TestRestoreNeedsARevisionBump(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts etcd three times")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	const name, scope = "restored", "jobs/restore"
	peer, err := etcdembed.FreeURL()
	require.NoError(t, err)

	res, err := fencing.NewResource(fencing.ResourceConfig{DataDir: filepath.Join(dir, "resource")})
	require.NoError(t, err)
	defer res.Close()
	rs := httptest.NewServer(res)
	defer rs.Close()

	start := func(dataDir string) (*etcdembed.Server, *clientv3.Client) {
		t.Helper()
		srv, err := etcdembed.Start(ctx, etcdembed.Config{Name: name, DataDir: dataDir, PeerURL: peer, UnsafeNoFsync: true})
		require.NoError(t, err)
		t.Cleanup(srv.Close)
		return srv, etcdtest.Client(t, srv)
	}
	// hold takes the lock and writes to the resource with its token
	// through the CLI, as a child of 'coordctl lock' would.
	hold := func(srv *etcdembed.Server, cli *clientv3.Client, value string) (fencing.Token, cliResult) {
		t.Helper()
		m, err := lock.New(cli, scope)
		require.NoError(t, err)
		defer func() { require.NoError(t, m.Close()) }()
		h, err := m.Lock(ctx)
		require.NoError(t, err)
		defer func() { require.NoError(t, h.Unlock(ctx)) }()
		out := runInProcess(ctx, nil, "resource", "put", "config", value, "--url", rs.URL,
			"--token", h.Token().String(), "--scope", scope)
		return h.Token(), out
	}

	srv, cli := start(filepath.Join(dir, "etcd"))
	tok, out := hold(srv, cli, "before-snapshot")
	require.Equal(t, cmdutil.ExitOK, out.Code, out.Stderr)
	snap := filepath.Join(dir, "snapshot.db")
	_, err = snapshotsave.SaveWithVersion(ctx, zap.NewNop(), clientv3.Config{Endpoints: srv.Endpoints(), DialTimeout: 5 * time.Second}, snap)
	require.NoError(t, err)
	st, err := snapshot.NewV3(zap.NewNop()).Status(snap)
	require.NoError(t, err)
	require.GreaterOrEqual(t, st.Revision, int64(tok))

	// Work after the snapshot: the revision (and so the next floor) moves
	// well past the snapshot's.
	const gap = 1000 // the gap above which a refusal without etcd guesses a restore
	for i := range gap + 200 {
		_, err := cli.Put(ctx, "filler", fmt.Sprint(i))
		require.NoError(t, err)
	}
	floor, out := hold(srv, cli, "after-snapshot")
	require.Equal(t, cmdutil.ExitOK, out.Code, out.Stderr)
	require.Greater(t, int64(floor), st.Revision+gap, "the floor passed the snapshot's revision")
	require.NoError(t, cli.Close())
	srv.Close()

	fl := runInProcess(ctx, nil, "resource", "floors", "--url", rs.URL, "-w", "json")
	require.Equal(t, cmdutil.ExitOK, fl.Code, fl.Stderr)
	var floors fencing.FloorsResult
	require.NoError(t, json.Unmarshal([]byte(fl.Stdout), &floors))
	require.Equal(t, floor, floors.Highest)

	restore := func(out string, bump uint64) {
		t.Helper()
		require.NoError(t, snapshot.NewV3(zap.NewNop()).Restore(snapshot.RestoreConfig{
			SnapshotPath: snap, Name: name, OutputDataDir: out,
			PeerURLs: []string{peer}, InitialCluster: name + "=" + peer, InitialClusterToken: "etcd-cluster",
			RevisionBump: bump, MarkCompacted: bump > 0,
		}))
	}

	// Restored as it was: the revisions restart at the snapshot's.
	restore(filepath.Join(dir, "plain"), 0)
	srv, cli = start(filepath.Join(dir, "plain"))
	low, out := hold(srv, cli, "after-plain-restore")
	require.Less(t, low, floor)
	require.Equal(t, cmdutil.ExitStale, out.Code, "a real holder refused as stale: %s", out.Stderr)
	require.Contains(t, out.Stderr, "restored from a snapshot")
	require.Contains(t, out.Stderr, "--bump-revision")
	require.Contains(t, out.Stderr, "docs/operations.md")
	require.NoError(t, cli.Close())
	srv.Close()

	// Restored with the bump: the next holder's token is above every floor.
	restore(filepath.Join(dir, "bumped"), uint64(floors.Highest))
	srv, cli = start(filepath.Join(dir, "bumped"))
	high, out := hold(srv, cli, "after-bumped-restore")
	require.Greater(t, high, floor)
	require.Equal(t, cmdutil.ExitOK, out.Code, out.Stderr)
	got, err := (&fencing.Client{BaseURL: rs.URL}).Get(ctx, "config")
	require.NoError(t, err)
	require.Equal(t, "after-bumped-restore", got.Value)
	require.Equal(t, high, got.Token)
}
