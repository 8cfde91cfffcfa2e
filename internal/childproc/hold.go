package childproc

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/coordkit/coordkit/session"
)

// Hold is what a command runs under — a lock, a semaphore's slot, a
// leadership — as Supervise sees it. lock.Held, semaphore.Held and
// election.Leadership have Lost, Err and Alive; the caller adds the session
// the hold is on and its release.
type Hold interface {
	// Lost is closed when the hold is lost; nil for a hold whose loss is
	// not observed (a redsync lock).
	Lost() <-chan struct{}
	// Err says why, once lost.
	Err() error
	// Alive reports at this instant whether the hold can be trusted: not
	// lost, and the local deadline not passed.
	Alive() bool
	// Session is the lease the hold is on; nil for none.
	Session() *session.Session
	// Release gives the hold up. Supervise calls it once, last, when the
	// command and its whole process group have ended. It bounds its own
	// time (etcd may be gone after a loss).
	Release() error
}

// End is how a supervised hold ended.
type End int

const (
	// Exited: the command exited by itself.
	Exited End = iota
	// Lost: the hold was lost while the command ran (or, without a
	// command, while it was held).
	Lost
	// Stopped: the caller closed Supervision.Stop.
	Stopped
	// StartFailed: the command could not be started.
	StartFailed
)

// Supervision is a hold and the command to run while it lasts.
type Supervision struct {
	Hold Hold
	// What names the hold in notes: "lock jobs/nightly".
	What string
	// Command runs while the hold lasts; with an empty Path nothing runs and
	// Supervise holds until the hold is lost or Stop is closed.
	Command Config
	// Signals are forwarded to the command's process group, SIGHUP as
	// SIGTERM (a closed terminal must stop the command, not reload it).
	Signals <-chan os.Signal
	// Stop, when closed, stops the command (SIGTERM, SIGKILL after the
	// grace) and releases the hold: a shutdown, a resignation.
	Stop <-chan struct{}
	// Notef receives what a user must be told (loss, processes left
	// behind); nil discards it.
	Notef func(format string, args ...any)
	// OnEnd, if set, is called once when the hold's use ends, before the
	// command is stopped and the hold released (a sidecar turns unready
	// first). It gets the outcome so far.
	OnEnd func(Outcome)
}

// Outcome is how Supervise ended.
type Outcome struct {
	End End
	// Code is the command's status (its exit code, 128+N for signal N);
	// 0 without a command.
	Code int
	// Lost is the loss when the hold was lost before the command's exit
	// was seen: End is Lost, or Exited when the local deadline had passed
	// by the time the exit was noticed (a process frozen and woken reads
	// both at once, in either order; the command may have run unprotected).
	Lost error
	// StartErr is why the command did not start (End StartFailed).
	StartErr error
	// ReleaseErr is the error of Hold.Release.
	ReleaseErr error
}

// errDeadlinePassed stands for a loss whose hold reported no reason.
var errDeadlinePassed = errors.New("childproc: the local deadline passed")

// Supervise starts the command (if any) and waits for it to exit, for the
// hold to be lost or for Stop. However it ends, the command's process group
// is stopped before the hold is released, so nothing the command started
// runs on after the release.
//
// On loss, SIGKILL comes after the command's kill grace or at the
// earliest moment the server could give the hold to someone else, whichever
// is first: for a lease that expired (session.ErrExpired) that is
// Session.EarliestExpiry; after a revoke or a deletion of the key it is
// now, since another holder may already have been granted. The same bound
// holds when the hold is lost while the command is being stopped for
// another reason.
func Supervise(sv Supervision) Outcome {
	notef := sv.notef
	h := sv.Hold
	done := make(chan struct{})
	defer close(done)
	kill := killOnLoss(h, done)

	var child *Child
	var childDone <-chan struct{}
	var fired <-chan string
	if s := h.Session(); s != nil && sv.Command.Deadline == nil {
		// What the watchdog holds: the local deadline (SIGTERM) and the
		// instant the command must be dead (KillBy's for an expiry).
		sv.Command.Deadline = func() (time.Time, time.Time) {
			return s.Deadline(), killAt(s.EarliestExpiry(), s.Margin())
		}
	}
	if sv.Command.Path != "" {
		var err error
		if child, err = Start(sv.Command); err != nil {
			o := Outcome{End: StartFailed, StartErr: err}
			return finish(sv, o, nil, kill)
		}
		childDone, fired = child.Done(), child.Fired()
	}
	for {
		select {
		case what := <-fired:
			notef("the watchdog acted for %s: %s", sv.What, firedNote[what])
			fired = nil // the rest is noted by finish
		case <-childDone:
			o := Outcome{End: Exited, Code: child.ExitCode()}
			if !h.Alive() {
				o.Lost = lossOf(h)
				notef("lost %s before the command's exit was seen (%v): the command may have run after the lease could expire", sv.What, o.Lost)
			}
			if child.GroupAlive() {
				notef("the command exited leaving processes in its group; stopping them (SIGTERM, SIGKILL after %s) before releasing %s", child.KillGrace(), sv.What)
			}
			return finish(sv, o, child, kill)
		case sig := <-sv.Signals:
			if s, ok := sig.(syscall.Signal); ok && child != nil {
				if s == syscall.SIGHUP {
					s = syscall.SIGTERM
				}
				_ = child.Signal(s)
			}
		case <-h.Lost():
			o := Outcome{End: Lost, Lost: lossOf(h)}
			if child != nil {
				notef("lost %s: %v; stopping the command (SIGTERM, SIGKILL after %s%s)", sv.What, o.Lost, child.KillGrace(), killByNote(h))
			}
			return finish(sv, o, child, kill)
		case <-sv.Stop:
			return finish(sv, Outcome{End: Stopped}, child, kill)
		}
	}
}

func (sv Supervision) notef(format string, args ...any) {
	if sv.Notef != nil {
		sv.Notef(format, args...)
	}
}

// firedNote explains what the watchdog did on its own.
var firedNote = map[string]string{
	"term":     "no keepalive acknowledgement reached it before the lease's local deadline (this process was frozen or starved); it sent SIGTERM to the command's tree",
	"kill":     "the command's tree was still alive half the margin before the lease's earliest expiry on the server; it sent SIGKILL",
	"orphaned": "this process's pipe closed",
}

// finish calls OnEnd, stops what is left of the command and releases.
func finish(sv Supervision, o Outcome, child *Child, kill <-chan struct{}) Outcome {
	if sv.OnEnd != nil {
		sv.OnEnd(o)
	}
	if child != nil {
		code := child.StopBy(kill)
		// The watchdog has exited: what it did on its own while this
		// process could not see it (frozen) is all read now.
		for more := true; more; {
			select {
			case what := <-child.Fired():
				sv.notef("the watchdog acted for %s: %s", sv.What, firedNote[what])
			default:
				more = false
			}
		}
		if o.End != Exited {
			o.Code = code
		}
		if o.Lost == nil && o.End != Stopped && !sv.Hold.Alive() {
			// Lost while processes left in the group were being stopped.
			o.Lost = lossOf(sv.Hold)
		}
	}
	o.ReleaseErr = sv.Hold.Release()
	return o
}

// killOnLoss returns a channel closed at the instant a lost hold's command
// must be dead (KillBy), until done is closed.
func killOnLoss(h Hold, done <-chan struct{}) <-chan struct{} {
	kill := make(chan struct{})
	go func() {
		select {
		case <-h.Lost():
		case <-done:
			return
		}
		if d := time.Until(KillBy(h)); d > 0 {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
			case <-done:
				return
			}
		}
		close(kill)
	}()
	return kill
}

// KillBy is the instant at which the command of a lost hold gets SIGKILL:
// when the lease expired locally, half its margin before the lease's
// earliest possible expiry on the server (killAt), and now when it was
// revoked, its key deleted, or it has no session.
func KillBy(h Hold) time.Time {
	s := h.Session()
	if s != nil && errors.Is(s.Err(), session.ErrExpired) {
		return killAt(s.EarliestExpiry(), s.Margin())
	}
	return time.Now()
}

// killAt is when SIGKILL goes for a lease that expired locally: the
// command must be dead, not dying, when the server can expire the lease
// (earliest) and grant the hold to another, and the kill takes time — a
// timer that fires late on a loaded machine, the kernel's tearing down of
// the processes. Sent at earliest itself, what is left between the
// command's death and the next holder's grant is only the phase of etcd's
// expiry check (every 500 ms) and a Raft round: down to 43 ms in 8 runs
// with the supervisor at SCHED_IDLE (load 14-18), and nothing when the
// check falls at the expiry. So it goes half the margin before: the margin
// between the local deadline (SIGTERM) and earliest is split between the
// command's grace and the kill's lead (167 ms and more in 8 runs after).
func killAt(earliest time.Time, margin time.Duration) time.Time {
	return earliest.Add(-margin / 2)
}

func killByNote(h Hold) string {
	d := time.Until(KillBy(h)).Round(time.Millisecond)
	if d <= 0 {
		return ", or at once: the lease may already have expired on the server, whichever is first"
	}
	return fmt.Sprintf(", or in %s, before the lease's earliest expiry on the server, whichever is first", d)
}

func lossOf(h Hold) error {
	if err := h.Err(); err != nil {
		return err
	}
	return errDeadlinePassed
}

// GraceWarning returns a warning, to follow the grace's name ("--kill-grace
// 5s is longer ..."), when grace is longer than what the margin by which a
// lease's local deadline comes before its earliest expiry on the server
// leaves the command (half of it, killAt), and "" otherwise: on a loss at
// the local deadline the command then gets SIGKILL that long after
// SIGTERM, not grace.
func GraceWarning(grace, margin time.Duration) string {
	left := margin - margin/2
	if grace <= left {
		return ""
	}
	return fmt.Sprintf("%s is longer than %s, half the lease's margin %s: if the lease is lost at its local deadline, "+
		"the command gets SIGKILL %s after SIGTERM (%s before the lease's earliest expiry on the server, so that it is dead by then), not %s",
		grace, left, margin, left, margin/2, grace)
}
