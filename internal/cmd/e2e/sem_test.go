package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
)

// holdUntil is a shell command that prints its line, then runs until the
// file stop exists.
func holdUntil(line, stop string) []string {
	return []string{"sh", "-c", `echo "` + line + `"; while [ ! -e '` + stop + `' ]; do sleep 0.02; done`}
}

func countKeys(t *testing.T, cli *clientv3.Client, prefix string) int {
	t.Helper()
	resp, err := cli.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	require.NoError(t, err)
	return int(resp.Count)
}

// statusOf runs coordctl lock|sem status NAME -w json through the binary.
func statusOf(t *testing.T, env []string, kind, name string) (statusJSON, int) {
	t.Helper()
	p := startCoordctl(t, env, kind, "status", name, "-w", "json")
	line := p.line(t)
	code := p.wait(t, 20*time.Second)
	return decodeStatus(t, line), code
}

// Three coordctl sem processes on a semaphore of limit 2: two hold (slots
// 0 and 1, each with its scope in the environment), the third waits, and
// gets the slot the first one released, with a larger token.
func TestSemE2ELimitTwoThreeProcesses(t *testing.T) {
	t.Parallel()
	srv, cli := etcdtest.StartWithClient(t)
	env := append(lockEnv(srv.Endpoints()[0]), "COORD_FENCING_SCOPE=inherited", "COORD_SEM_SLOT=9")
	dir := t.TempDir()
	line := `$COORD_SEM_SLOT|$COORD_FENCING_SCOPE|$COORD_FENCING_TOKEN|$COORD_LOCK_NAME`
	start := func(i int) *proc {
		return startCoordctl(t, env, append([]string{"sem", "e2e/pool", "--limit", "2", "--"},
			holdUntil(line, filepath.Join(dir, "stop"+strconv.Itoa(i)))...)...)
	}
	type hold struct {
		slot  int
		scope string
		token int64
	}
	parse := func(l string) hold {
		f := strings.Split(l, "|")
		require.Len(t, f, 4, l)
		slot, err := strconv.Atoi(f[0])
		require.NoError(t, err, l)
		tok, err := strconv.ParseInt(f[2], 10, 64)
		require.NoError(t, err, l)
		require.Equal(t, "e2e/pool", f[3])
		require.Equal(t, "e2e/pool/slots/"+f[0], f[1], "the slot's key")
		return hold{slot, f[1], tok}
	}
	p1 := start(1)
	h1 := parse(p1.line(t))
	p2 := start(2)
	h2 := parse(p2.line(t))
	require.ElementsMatch(t, []int{0, 1}, []int{h1.slot, h2.slot})

	p3 := start(3)
	require.Eventually(t, func() bool { return countKeys(t, cli, "e2e/pool/queue/") == 1 }, 20*time.Second, 10*time.Millisecond,
		"the third process must queue")
	st, code := statusOf(t, env, "sem", "e2e/pool")
	require.Equal(t, exitOK, code)
	require.Equal(t, 2, st.Limit)
	require.Len(t, st.Holders, 2)
	require.Len(t, st.Waiters, 1)
	select {
	case l := <-p3.lines:
		t.Fatalf("the third process ran while two held: %q", l)
	default:
	}

	require.NoError(t, os.WriteFile(filepath.Join(dir, "stop1"), nil, 0o600))
	require.Equal(t, exitOK, p1.wait(t, 20*time.Second), p1.stderr.String())
	h3 := parse(p3.line(t))
	require.Equal(t, h1.slot, h3.slot, "the freed slot")
	require.Greater(t, h3.token, h1.token, "tokens grow per slot")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "stop2"), nil, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "stop3"), nil, 0o600))
	require.Equal(t, exitOK, p2.wait(t, 20*time.Second), p2.stderr.String())
	require.Equal(t, exitOK, p3.wait(t, 20*time.Second), p3.stderr.String())
	_, code = statusOf(t, env, "sem", "e2e/pool")
	require.Equal(t, exitNotAcquired, code, "nobody holds it")
	require.Zero(t, countKeys(t, cli, "e2e/pool/slots/"))
}

// sem --try with both slots taken exits 3; with a free slot it runs.
func TestSemE2ETry(t *testing.T) {
	t.Parallel()
	srv, _ := etcdtest.StartWithClient(t)
	env := lockEnv(srv.Endpoints()[0])
	p := startCoordctl(t, env, "sem", "e2e/try", "--limit", "1", "-w", "json")
	require.Contains(t, p.line(t), `"scope":"e2e/try/slots/0"`)
	try := startCoordctl(t, env, "sem", "e2e/try", "--limit", "1", "--try", "--", "true")
	require.Equal(t, exitNotAcquired, try.wait(t, 20*time.Second), try.stderr.String())
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, exitOK, p.wait(t, 20*time.Second), p.stderr.String())
	try = startCoordctl(t, env, "sem", "e2e/try", "--limit", "1", "--try", "--", "sh", "-c", "exit 6")
	require.Equal(t, 6, try.wait(t, 20*time.Second), "the child's status passes through: %s", try.stderr.String())
}

// Two coordctl lock --read processes hold the lock together; a writer
// (coordctl lock without --read) waits behind them and runs once both left.
func TestLockE2EReadersShareWriterWaits(t *testing.T) {
	t.Parallel()
	srv, cli := etcdtest.StartWithClient(t)
	env := lockEnv(srv.Endpoints()[0])
	dir := t.TempDir()
	r1 := startCoordctl(t, env, append([]string{"lock", "e2e/rw", "--read", "--"}, holdUntil("reader", filepath.Join(dir, "stop1"))...)...)
	require.Equal(t, "reader", r1.line(t))
	r2 := startCoordctl(t, env, append([]string{"lock", "e2e/rw", "--read", "--"}, holdUntil("reader", filepath.Join(dir, "stop2"))...)...)
	require.Equal(t, "reader", r2.line(t), "a second reader shares the lock")

	w := startCoordctl(t, env, "lock", "e2e/rw", "--", "sh", "-c", `echo "writer $COORD_FENCING_TOKEN"`)
	require.Eventually(t, func() bool { return countKeys(t, cli, "e2e/rw/") == 3 }, 20*time.Second, 10*time.Millisecond)
	st, code := statusOf(t, env, "lock", "e2e/rw")
	require.Equal(t, exitOK, code)
	require.Len(t, st.Holders, 2)
	for _, h := range st.Holders {
		require.Equal(t, "shared", h.Mode)
		require.True(t, strings.HasPrefix(h.Key, "e2e/rw/read/"), h.Key)
	}
	require.Len(t, st.Waiters, 1)
	require.Equal(t, "exclusive", st.Waiters[0].Mode)

	// A reader that comes after the waiting writer waits too (no writer
	// starvation): --try says so at once.
	late := startCoordctl(t, env, "lock", "e2e/rw", "--read", "--try", "--", "true")
	require.Equal(t, exitNotAcquired, late.wait(t, 20*time.Second), late.stderr.String())

	require.NoError(t, os.WriteFile(filepath.Join(dir, "stop1"), nil, 0o600))
	require.Equal(t, exitOK, r1.wait(t, 20*time.Second), r1.stderr.String())
	select {
	case l := <-w.lines:
		t.Fatalf("the writer ran beside a reader: %q", l)
	default:
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "stop2"), nil, 0o600))
	require.Equal(t, exitOK, r2.wait(t, 20*time.Second), r2.stderr.String())
	require.True(t, strings.HasPrefix(w.line(t), "writer "))
	require.Equal(t, exitOK, w.wait(t, 20*time.Second), w.stderr.String())
}

// --lock-delay: a holder killed with SIGKILL (its lease left to expire) is
// followed no earlier than the expiry + the delay; a clean release hands
// over without it (an hour's delay would not end within the test).
func TestLockE2ELockDelay(t *testing.T) {
	t.Parallel()
	srv, cli := etcdtest.StartWithClient(t)
	env := lockEnv(srv.Endpoints()[0])
	const delay = 2 * time.Second

	t.Run("holder killed", func(t *testing.T) {
		// --ttl 4s, not 2s: on a starved machine a 2s holder lost its
		// lease before the waiter queued (then the waiter never queues).
		h := startCoordctl(t, env, "lock", "e2e/delay", "--ttl", "4s", "--", "sh", "-c", `echo $$; while :; do sleep 0.05; done`)
		pgid, err := strconv.Atoi(h.line(t))
		require.NoError(t, err)
		// The command survives coordctl's SIGKILL in its own group.
		t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
		resp, err := cli.Get(context.Background(), "e2e/delay/", clientv3.WithPrefix())
		require.NoError(t, err)
		require.Len(t, resp.Kvs, 1)
		holderKey := string(resp.Kvs[0].Key)

		w := startCoordctl(t, env, "lock", "e2e/delay", "--lock-delay", delay.String(), "--", "echo", "granted")
		require.Eventually(t, func() bool { return countKeys(t, cli, "e2e/delay/") == 2 }, 20*time.Second, 10*time.Millisecond,
			"the waiter must queue before the holder is lost")
		require.NoError(t, h.cmd.Process.Signal(syscall.SIGKILL))

		// The holder's key goes when etcd expires its lease. lastSeen is
		// the start of the last read that still found it: the expiry came
		// after that moment.
		var lastSeen time.Time
		for {
			at := time.Now()
			resp, err := cli.Get(context.Background(), holderKey)
			require.NoError(t, err)
			if len(resp.Kvs) == 0 {
				break
			}
			lastSeen = at
			time.Sleep(5 * time.Millisecond) // polling etcd: no event tells "not yet"
		}
		require.Equal(t, "granted", w.line(t))
		require.GreaterOrEqual(t, time.Since(lastSeen), delay, "granted before the lease expiry + --lock-delay")
		require.Equal(t, exitOK, w.wait(t, 20*time.Second), w.stderr.String())
	})

	t.Run("clean release", func(t *testing.T) {
		dir := t.TempDir()
		h := startCoordctl(t, env, append([]string{"lock", "e2e/delay-clean", "--ttl", "60s", "--"}, holdUntil("held", filepath.Join(dir, "stop"))...)...)
		require.Equal(t, "held", h.line(t))
		w := startCoordctl(t, env, "lock", "e2e/delay-clean", "--lock-delay", "1h", "--", "echo", "granted")
		require.Eventually(t, func() bool { return countKeys(t, cli, "e2e/delay-clean/") == 2 }, 20*time.Second, 10*time.Millisecond)
		resp, err := cli.Get(context.Background(), "e2e/delay-clean/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
		require.NoError(t, err)
		holderLease := clientv3.LeaseID(resp.Kvs[0].Lease)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "stop"), nil, 0o600))
		require.Equal(t, exitOK, h.wait(t, 20*time.Second), h.stderr.String())
		require.Equal(t, "granted", w.line(t), "a clean release costs no delay")
		require.Equal(t, exitOK, w.wait(t, 20*time.Second), w.stderr.String())
		// The released holder left its lease to expire rather than revoke
		// it: a revoke right after the release could make a waiter that
		// asks a moment later take the release for a loss.
		ttl, err := cli.TimeToLive(context.Background(), holderLease)
		require.NoError(t, err)
		require.Positive(t, ttl.TTL, "lease of a cleanly released holder must not be revoked")
	})
}

// lock status through the binary: free (exit 3, text), held by coordctl
// lock (exit 0, the JSON object matches what the holder printed), held by
// concurrency.Mutex (exit 0), free again (exit 3).
func TestLockStatusE2E(t *testing.T) {
	t.Parallel()
	srv, cli := etcdtest.StartWithClient(t)
	env := lockEnv(srv.Endpoints()[0])
	p := startCoordctl(t, env, "lock", "status", "e2e/st")
	require.Equal(t, "lock e2e/st: free at revision "+strconv.FormatInt(revisionOf(t, cli), 10)+", 0 waiting", p.line(t))
	require.Equal(t, exitNotAcquired, p.wait(t, 20*time.Second), p.stderr.String())

	h := startCoordctl(t, env, "lock", "e2e/st", "-w", "json")
	held := h.line(t)
	st, code := statusOf(t, env, "lock", "e2e/st")
	require.Equal(t, exitOK, code)
	require.Len(t, st.Holders, 1)
	require.Contains(t, held, `"key":"`+st.Holders[0].Key+`"`)
	require.Contains(t, held, `"lease":"`+st.Holders[0].Lease+`"`)
	require.Contains(t, held, `"token":`+strconv.FormatInt(st.Holders[0].Token, 10))
	require.NoError(t, h.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, exitOK, h.wait(t, 20*time.Second), h.stderr.String())

	// A lock held by etcd's own concurrency.Mutex, as etcdctl lock takes it.
	s, err := concurrency.NewSession(cli, concurrency.WithTTL(30))
	require.NoError(t, err)
	defer s.Close()
	m := concurrency.NewMutex(s, "e2e/st")
	require.NoError(t, m.Lock(context.Background()))
	st, code = statusOf(t, env, "lock", "e2e/st")
	require.Equal(t, exitOK, code)
	require.Len(t, st.Holders, 1)
	require.Equal(t, m.Key(), st.Holders[0].Key)
	require.Equal(t, fmt.Sprintf("%x", int64(s.Lease())), st.Holders[0].Lease)
	require.Positive(t, *st.Holders[0].TTL)
	require.NoError(t, m.Unlock(context.Background()))
	_, code = statusOf(t, env, "lock", "e2e/st")
	require.Equal(t, exitNotAcquired, code)
}

func revisionOf(t *testing.T, cli *clientv3.Client) int64 {
	t.Helper()
	resp, err := cli.Get(context.Background(), "e2e/st/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	require.NoError(t, err)
	return resp.Header.Revision
}
