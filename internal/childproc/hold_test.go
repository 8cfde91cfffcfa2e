package childproc

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/session"
)

// fakeHold is a hold without a session that the test loses by hand.
type fakeHold struct {
	lost     chan struct{}
	once     sync.Once
	dead     atomic.Bool // Alive reports false (the deadline passed)
	released atomic.Int32
	events   *[]string
	mu       *sync.Mutex
}

var errFakeLoss = errors.New("fake loss")

func newFakeHold() *fakeHold {
	return &fakeHold{lost: make(chan struct{}), events: &[]string{}, mu: &sync.Mutex{}}
}

func (h *fakeHold) Lost() <-chan struct{} { return h.lost }
func (h *fakeHold) Err() error {
	if h.dead.Load() {
		return errFakeLoss
	}
	return nil
}
func (h *fakeHold) Alive() bool {
	if h.dead.Load() {
		h.once.Do(func() { close(h.lost) })
		return false
	}
	return true
}
func (h *fakeHold) Session() *session.Session { return nil }
func (h *fakeHold) Release() error {
	h.released.Add(1)
	h.note("release")
	return nil
}
func (h *fakeHold) lose() { h.dead.Store(true); h.Alive() }
func (h *fakeHold) note(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.events = append(*h.events, s)
}

// A lost hold without a session has no time left: the command gets
// SIGKILL at once, whatever its kill grace (a minute here), and the
// release comes after the group is gone.
func TestSuperviseLossKillsByTheEarliestExpiryNotTheGrace(t *testing.T) {
	ready := filepath.Join(t.TempDir(), "ready")
	h := newFakeHold()
	out := make(chan Outcome, 1)
	go func() {
		out <- Supervise(Supervision{Hold: h, What: "test hold", Command: Config{Path: "sh",
			Args: []string{"-c", `trap '' TERM; echo $$ > ` + ready + `; while :; do sleep 0.05; done`}, KillGrace: time.Minute}})
	}()
	pid := waitPid(t, ready)
	h.lose()
	var o Outcome
	select {
	case o = <-out:
	case <-time.After(30 * time.Second): // the grace is a minute: only the kill bound ends it sooner
		t.Fatal("the command was not killed before its kill grace ended")
	}
	require.Equal(t, Lost, o.End)
	require.ErrorIs(t, o.Lost, errFakeLoss)
	require.Equal(t, 128+int(syscall.SIGKILL), o.Code)
	require.EqualValues(t, 1, h.released.Load())
	requireGone(t, pid)
}

// The command's exit and the loss are both there when Supervise looks (a
// process frozen and woken): whichever it reads first, the outcome says
// lost.
func TestSuperviseExitAfterTheDeadlineCountsAsLost(t *testing.T) {
	for range 5 {
		h := newFakeHold()
		h.dead.Store(true) // the deadline has passed; Lost is not closed yet
		o := Supervise(Supervision{Hold: h, What: "test hold", Command: Config{Path: "true"}})
		require.Contains(t, []End{Exited, Lost}, o.End)
		require.ErrorIs(t, o.Lost, errFakeLoss)
		require.EqualValues(t, 1, h.released.Load())
	}
}

// SIGHUP reaches the command as SIGTERM: a closed terminal stops it.
func TestSuperviseForwardsSIGHUPAsSIGTERM(t *testing.T) {
	ready := filepath.Join(t.TempDir(), "ready")
	h := newFakeHold()
	sigs := make(chan os.Signal, 1)
	out := make(chan Outcome, 1)
	go func() {
		out <- Supervise(Supervision{Hold: h, Signals: sigs, Command: Config{Path: "sh",
			Args: []string{"-c", `trap 'exit 9' TERM; trap '' HUP; echo $$ > ` + ready + `; while :; do sleep 0.05; done`}}})
	}()
	waitPid(t, ready)
	sigs <- syscall.SIGHUP
	o := <-out
	require.Equal(t, Exited, o.End)
	require.Equal(t, 9, o.Code, "SIGTERM's trap, not SIGHUP (ignored)")
	require.NoError(t, o.Lost)
}

// Stop ends the command, then the hold is released; OnEnd comes first.
func TestSuperviseStopOrder(t *testing.T) {
	ready := filepath.Join(t.TempDir(), "ready")
	h := newFakeHold()
	stop := make(chan struct{})
	out := make(chan Outcome, 1)
	go func() {
		out <- Supervise(Supervision{Hold: h, Stop: stop, OnEnd: func(o Outcome) { h.note("end") },
			Command: Config{Path: "sh", Args: []string{"-c", `echo $$ > ` + ready + `; exec sleep 300`}}})
	}()
	pid := waitPid(t, ready)
	close(stop)
	o := <-out
	require.Equal(t, Stopped, o.End)
	require.Equal(t, 128+int(syscall.SIGTERM), o.Code)
	require.Equal(t, []string{"end", "release"}, *h.events)
	requireGone(t, pid)
}

// Without a command Supervise holds until the loss and releases.
func TestSuperviseWithoutCommand(t *testing.T) {
	h := newFakeHold()
	out := make(chan Outcome, 1)
	go func() { out <- Supervise(Supervision{Hold: h}) }()
	h.lose()
	o := <-out
	require.Equal(t, Lost, o.End)
	require.ErrorIs(t, o.Lost, errFakeLoss)
	require.EqualValues(t, 1, h.released.Load())
}

func TestGraceWarningNamesBothFigures(t *testing.T) {
	require.Empty(t, GraceWarning(500*time.Millisecond, time.Second))
	w := GraceWarning(5*time.Second, time.Second)
	require.Contains(t, w, "5s")
	require.Contains(t, w, "margin 1s")
}

// The adversarial pass after issue 25: with SIGKILL sent at the lease's
// earliest expiry itself, the command's death came before the next
// holder's grant only by the phase of etcd's expiry check (43 ms in the
// worst of 8 runs, nothing at worst): a kill takes time. It goes half the
// margin before, and the grace warning counts from that.
func TestKillComesBeforeTheEarliestExpiry(t *testing.T) {
	earliest := time.Unix(1000, 0)
	for _, margin := range []time.Duration{200 * time.Millisecond, time.Second} {
		at := killAt(earliest, margin)
		require.Equal(t, margin/2, earliest.Sub(at), "margin %s", margin)
		require.True(t, at.After(earliest.Add(-margin)), "SIGKILL after the local deadline (SIGTERM)")
	}
	require.Empty(t, GraceWarning(100*time.Millisecond, 200*time.Millisecond))
	w := GraceWarning(150*time.Millisecond, 200*time.Millisecond)
	require.Contains(t, w, "SIGKILL 100ms after SIGTERM")
	require.Contains(t, w, "100ms before the lease's earliest expiry")
}
