package childproc

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/session"
)

func TestRunSupervision(t *testing.T) {
	h := newFakeHold()
	sv := Run{Hold: h, What: "lock x", Command: []string{"sh", "-c", "exit 3"}, Env: map[string]string{EnvLockName: "x"}, KillGrace: time.Second}.Supervision()
	require.Equal(t, Config{Path: "sh", Args: []string{"-c", "exit 3"}, Env: map[string]string{EnvLockName: "x"}, KillGrace: time.Second}, sv.Command)
	o := Supervise(sv)
	require.Equal(t, Exited, o.End)
	require.Equal(t, 3, o.Code)
	require.EqualValues(t, 1, h.released.Load())

	require.Empty(t, Run{Hold: h}.Supervision().Command.Path, "no command: nothing runs")
	require.Empty(t, Run{Hold: h, Command: []string{"true"}, KillGrace: time.Hour}.GraceWarning(), "no session, no margin to warn about")
}

func TestKeyEnvAndReleaser(t *testing.T) {
	require.Equal(t, map[string]string{EnvLockName: "pool", EnvLockKey: "pool/slots/1", EnvFencingToken: "7",
		EnvFencingScope: "pool/slots/1", EnvSemSlot: "1"}, KeyEnv("pool", "pool/slots/1", 7, "pool/slots/1", EnvSemSlot, "1"))
	require.Equal(t, map[string]string{EnvElection: "sched", EnvLeaderID: "n1", EnvFencingToken: "9", EnvFencingScope: "sched/"},
		LeaderEnv("sched", "n1", 9, "sched/"))

	h := newFakeHold()
	var deadline time.Duration
	release := Releaser(context.Background(), h, time.Minute, func(ctx context.Context) error {
		d, _ := ctx.Deadline()
		deadline = time.Until(d)
		return session.ErrNotHeld
	})
	require.NoError(t, release(), "a key already gone is no error")
	require.Greater(t, deadline, CloseGrace, "alive: the command timeout")
	h.lose()
	require.NoError(t, release())
	require.LessOrEqual(t, deadline, CloseGrace, "lost: at most CloseGrace, etcd may be gone")
}

// Without a command, Execute calls Out once, then holds until ctx ends and
// releases; an Out error releases at once and is returned.
func TestRunExecuteWithoutCommand(t *testing.T) {
	h := newFakeHold()
	outs := 0
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Outcome, 1)
	go func() {
		o, err := Run{Hold: h, What: "test hold", Out: func() error { outs++; cancel(); return nil }}.Execute(ctx)
		require.NoError(t, err)
		done <- o
	}()
	o := <-done
	require.Equal(t, Stopped, o.End)
	require.Equal(t, 1, outs)
	require.EqualValues(t, 1, h.released.Load())

	h = newFakeHold()
	errOut := errors.New("stdout gone")
	_, err := Run{Hold: h, What: "test hold", Out: func() error { return errOut }}.Execute(context.Background())
	require.ErrorIs(t, err, errOut)
	require.EqualValues(t, 1, h.released.Load(), "released after Out failed")
}
