package e2e

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
)

// heldLine is what `coordctl lock` and `coordctl sem` print with -w json
// once they hold.
type heldLine struct {
	Scope string `json:"scope"`
	Key   string `json:"key"`
	Token uint64 `json:"token"`
}

func holdWith(t *testing.T, env []string, args ...string) (*proc, heldLine) {
	t.Helper()
	p := startCoordctl(t, env, append(args, "-w", "json")...)
	l := p.line(t)
	var h heldLine
	require.NoError(t, json.Unmarshal([]byte(l), &h), l)
	return p, h
}

// etcdAndResource starts an etcd and a `coordctl resource serve` of the
// test's own and returns the environment that points coordctl at both.
func etcdAndResource(t *testing.T) []string {
	t.Helper()
	url := startResourceProcess(t, coordctlBinary(t), t.TempDir()).url
	return append(lockEnv(etcdtest.Start(t).Endpoints()[0]), "COORDCTL_RESOURCE_URL="+url)
}

// Issue 31, item 1: `lock report --prefix team1/` and `lock team1/report`
// are one etcd lock (the same keys), so they are one scope: once the second
// spelling's holder fenced the resource, the first spelling's stale holder
// is refused (exit 5). Before, their scopes were "report" and
// "team1/report", and the stale write was admitted.
func TestScopeE2ESpellingsOfOneLockShareAScope(t *testing.T) {
	t.Parallel()
	env := etcdAndResource(t)

	a, old := holdWith(t, env, "lock", "report", "--prefix", "team1/")
	require.Equal(t, "team1/report/", old.Scope, "the lock's key prefix")
	require.Regexp(t, "^team1/report/[0-9a-f]+$", old.Key)
	try := startCoordctl(t, env, "lock", "team1/report", "--try", "--", "true")
	require.Equal(t, exitNotAcquired, try.wait(t, 20*time.Second), "the same lock: %s", try.stderr.String())
	require.Equal(t, exitOK, a.stop(t))

	code, out, _ := runBinary(t, env, "lock", "team1/report", "--", "sh", "-c",
		`echo "scope=$COORD_FENCING_SCOPE" && exec "$0" resource fence`, coordctlBinary(t))
	require.Equal(t, exitOK, code, out)
	require.Contains(t, out, "scope=team1/report/\n", "the other spelling's scope")

	code, out, _ = runBinary(t, env, "resource", "put", "k", "stale",
		"--token", fmt.Sprint(old.Token), "--scope", old.Scope)
	require.Equal(t, exitStale, code, "the first spelling's holder is stale: %s", out)
}

// Issue 31, item 2: a lock named N#0 and slot 0 of the semaphore N are
// different keys; they do not exclude each other, so a write under one
// never refuses the other's holder. Before, both had the scope "N#0" and
// the semaphore's holder, which still held its slot, was refused.
func TestScopeE2ELockNamedLikeASlotIsNotTheSlot(t *testing.T) {
	t.Parallel()
	env := etcdAndResource(t)

	sem, slot := holdWith(t, env, "sem", "N", "--limit", "1")
	require.Equal(t, "N/slots/0", slot.Scope, "a slot's scope is its key")
	require.Equal(t, slot.Key, slot.Scope)

	lock, named := holdWith(t, env, "lock", "N#0")
	require.Equal(t, "N#0/", named.Scope)
	require.Greater(t, named.Token, slot.Token)
	code, out, _ := runBinary(t, env, "resource", "fence", "--token", fmt.Sprint(named.Token), "--scope", named.Scope)
	require.Equal(t, exitOK, code, out)

	code, out, _ = runBinary(t, env, "resource", "put", "k", "v", "--token", fmt.Sprint(slot.Token), "--scope", slot.Scope)
	require.Equal(t, exitOK, code, "the slot's holder still holds: %s", out)
	require.Equal(t, exitOK, lock.stop(t))
	require.Equal(t, exitOK, sem.stop(t))
}

// Issue 31, item 3: `--endpoints` naming members of two etcd clusters is an
// error naming both (exit 1), before anything is held; before, two holders
// ran together with tokens of two clusters.
func TestScopeE2EEndpointsOfTwoClustersRefused(t *testing.T) {
	t.Parallel()
	a, b := etcdtest.Start(t), etcdtest.Start(t)
	eps := a.Endpoints()[0] + "," + b.Endpoints()[0]
	code, out, _ := runBinary(t, nil, "--endpoints", eps, "lock", "twice", "--", "true")
	require.Equal(t, exitError, code, out)
	require.Contains(t, out, "etcd endpoints belong to different clusters")
	require.Contains(t, out, a.Endpoints()[0])
	require.Contains(t, out, b.Endpoints()[0])
}
