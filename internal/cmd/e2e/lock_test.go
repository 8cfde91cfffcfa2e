package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
	"github.com/coordkit/coordkit/internal/nettest"
)

// A second coordctl lock --try on the same name: its exit code.
func tryLock(t *testing.T, env []string, name string) int {
	t.Helper()
	p := startCoordctl(t, env, "lock", name, "--try", "--", "true")
	return p.wait(t, 20*time.Second)
}

func TestLockE2EChildEnvAndExitCode(t *testing.T) {
	t.Parallel()
	srv, cli := etcdtest.StartWithClient(t)
	env := append(lockEnv(srv.Endpoints()[0]), "COORD_LOCK_NAME=inherited", "COORD_FENCING_TOKEN=999999")
	p := startCoordctl(t, env, "lock", "e2e/env", "--",
		"sh", "-c", `echo "$COORD_LOCK_NAME|$COORD_LOCK_KEY|$COORD_FENCING_TOKEN"; exit 7`)
	fields := strings.Split(p.line(t), "|")
	require.Len(t, fields, 3)
	require.Equal(t, "e2e/env", fields[0])
	require.True(t, strings.HasPrefix(fields[1], "e2e/env/"), fields[1])
	tok, err := strconv.ParseInt(fields[2], 10, 64)
	require.NoError(t, err)
	require.Positive(t, tok)
	require.NotEqual(t, "999999", fields[2])
	require.Equal(t, 7, p.wait(t, 20*time.Second), p.stderr.String())
	resp, err := cli.Get(context.Background(), "e2e/env/", clientv3.WithPrefix())
	require.NoError(t, err)
	require.Empty(t, resp.Kvs, "released when the command exited")
}

// SIGTERM to a holder without a command releases the lock (exit 0); SIGTERM
// to a holder with a command is forwarded and the command's status passes
// through. Either way another coordctl lock --try then succeeds.
func TestLockE2ESIGTERMReleases(t *testing.T) {
	t.Parallel()
	srv, _ := etcdtest.StartWithClient(t)
	env := lockEnv(srv.Endpoints()[0])
	t.Run("no command", func(t *testing.T) {
		p := startCoordctl(t, env, "lock", "e2e/term", "-w", "json")
		require.Contains(t, p.line(t), `"name":"e2e/term"`)
		require.Equal(t, exitNotAcquired, tryLock(t, env, "e2e/term"))
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
		require.Equal(t, exitOK, p.wait(t, 20*time.Second), p.stderr.String())
		require.Equal(t, exitOK, tryLock(t, env, "e2e/term"))
	})
	t.Run("command", func(t *testing.T) {
		p := startCoordctl(t, env, "lock", "e2e/term", "--",
			"sh", "-c", `trap 'echo got-term; exit 9' TERM; echo ready; while :; do sleep 0.05; done`)
		require.Equal(t, "ready", p.line(t))
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
		require.Equal(t, "got-term", p.line(t))
		require.Equal(t, 9, p.wait(t, 20*time.Second), p.stderr.String())
		require.Equal(t, exitOK, tryLock(t, env, "e2e/term"))
	})
}

// groupGone reports whether no live process is left in process group
// pgid. Zombies count as gone: once the group's leader died, its children
// are reaped by init, which in a container may take its time.
func groupGone(pgid int) bool {
	if errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
		return true
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may contain spaces.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) >= 3 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" && f[0] != "X" {
			return false
		}
	}
	return true
}

// Revoking the holder's lease from outside: coordctl sends SIGTERM to the
// command's group, SIGKILL after --kill-grace (the command ignores SIGTERM)
// and exits 4.
func TestLockE2EChildKilledOnLoss(t *testing.T) {
	t.Parallel()
	srv, cli := etcdtest.StartWithClient(t)
	env := lockEnv(srv.Endpoints()[0])
	p := startCoordctl(t, env, "lock", "e2e/loss", "--kill-grace", "300ms", "--",
		"sh", "-c", `trap '' TERM; echo $$; while :; do sleep 0.05; done`)
	pid, err := strconv.Atoi(p.line(t))
	require.NoError(t, err)
	resp, err := cli.Get(context.Background(), "e2e/loss/", clientv3.WithPrefix())
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
	start := time.Now()
	_, err = cli.Revoke(context.Background(), clientv3.LeaseID(resp.Kvs[0].Lease))
	require.NoError(t, err)
	require.Equal(t, exitLost, p.wait(t, 20*time.Second), p.stderr.String())
	require.Less(t, time.Since(start), 5*time.Second)
	require.Contains(t, p.stderr.String(), "lost lock e2e/loss")
	require.Eventually(t, func() bool { return groupGone(pid) }, 2*time.Second, 10*time.Millisecond, "the command's process group must be killed")
}

// A coordctl lock frozen past its lease treats the lock as lost the moment
// it runs again: it does not trust a lease that etcd has expired meanwhile.
// Its command does not wait for it to wake: the watchdog killed it while
// coordctl was frozen, before etcd could expire the lease (issue 32).
func TestLockE2EFrozenHolderExits4OnWake(t *testing.T) {
	t.Parallel()
	srv, cli := etcdtest.StartWithClient(t)
	env := lockEnv(srv.Endpoints()[0])
	p := startCoordctl(t, env, "lock", "e2e/frozen", "--ttl", "2s", "--kill-grace", "2s", "--",
		"sh", "-c", `echo $$; while :; do sleep 0.05; done`)
	pid, err := strconv.Atoi(p.line(t))
	require.NoError(t, err)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGSTOP))
	// Wait until etcd expires the frozen holder's lease: its key goes.
	require.Eventually(t, func() bool {
		resp, err := cli.Get(context.Background(), "e2e/frozen/", clientv3.WithPrefix())
		return err == nil && len(resp.Kvs) == 0
	}, 15*time.Second, 20*time.Millisecond, "etcd never expired the frozen holder's lease")
	require.True(t, groupGone(pid), "the watchdog killed the command while coordctl was frozen")
	// Someone else takes the lock meanwhile.
	require.Equal(t, exitOK, tryLock(t, env, "e2e/frozen"))
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGCONT))
	require.Equal(t, exitLost, p.wait(t, 20*time.Second), p.stderr.String())
	require.Contains(t, p.stderr.String(), "lost lock e2e/frozen")
	require.Contains(t, p.stderr.String(), "the watchdog acted for lock e2e/frozen")
}

// etcd goes away under a holder: keepalives fail, and coordctl gives up the
// lock at its local deadline (before etcd could have expired the lease),
// stops the command and exits 4 promptly.
func TestLockE2EEtcdGoneExits4(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t) // closed here and again by cleanup: Close is idempotent
	env := lockEnv(srv.Endpoints()[0])
	p := startCoordctl(t, env, "lock", "e2e/gone", "--ttl", "2s", "--kill-grace", "500ms", "--",
		"sh", "-c", `echo $$; while :; do sleep 0.05; done`)
	pid, err := strconv.Atoi(p.line(t))
	require.NoError(t, err)
	// The clock starts when the member begins to stop: a gracefully
	// stopping member still serves the keepalive stream that is already
	// open, but the holder ends that stream once its connection leaves
	// READY (session/keepaliver.go), so Close returns about when the holder
	// gives up.
	stopped := time.Now()
	srv.Close()
	require.Equal(t, exitLost, p.wait(t, 20*time.Second), p.stderr.String())
	// A bound that tells "promptly" from a hang (a close waiting out its
	// request timeout): 6.8s once on a starved machine against 6s.
	require.Less(t, time.Since(stopped), 10*time.Second, "TTL 2s + kill grace + bounded clean-up")
	require.Contains(t, p.stderr.String(), "lost lock e2e/gone")
	require.Eventually(t, func() bool { return groupGone(pid) }, 2*time.Second, 10*time.Millisecond)
}

// The exits that need no holder process, through the built binary.
func TestLockE2EExitCodes(t *testing.T) {
	t.Parallel()
	srv, cli := etcdtest.StartWithClient(t)
	h := holdWithLibrary(t, cli, "e2e/codes")
	env := lockEnv(srv.Endpoints()[0])
	dead := nettest.ClosedAddr(t)
	cases := []struct {
		name   string
		env    []string
		args   []string
		code   int
		within time.Duration
		stderr string
	}{
		{"try", env, []string{"lock", "e2e/codes", "--try", "--", "true"}, exitNotAcquired, 10 * time.Second, h.Key()},
		{"timeout", env, []string{"lock", "e2e/codes", "--timeout", "500ms", "--", "true"}, exitNotAcquired, 10 * time.Second, "not acquired within 500ms"},
		// The dial timeout (1s) is used, not the command timeout (60s):
		// the bound sits between the two, far from both, as process
		// start-up (a -race binary) on a loaded machine takes its time.
		{"unreachable", lockEnv(dead), []string{"--dial-timeout", "1s", "--command-timeout", "60s", "lock", "x", "--", "true"}, exitError, 30 * time.Second, dead},
		{"bad ttl", env, []string{"lock", "x", "--ttl", "100ms", "--", "true"}, exitUsage, 10 * time.Second, "Usage:"},
		{"command not found", env, []string{"lock", "e2e/nf", "--", "/nonexistent/cmd"}, 127, 10 * time.Second, "/nonexistent/cmd"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			p := startCoordctl(t, tc.env, tc.args...)
			require.Equal(t, tc.code, p.wait(t, 20*time.Second), p.stderr.String())
			require.Contains(t, p.stderr.String(), tc.stderr)
			require.Less(t, time.Since(start), tc.within)
		})
	}
	require.NoError(t, h.Unlock(context.Background()))
}
