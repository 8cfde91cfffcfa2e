package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/childproc"
	"github.com/coordkit/coordkit/session"
)

// What lock, sem and elect share: the lease they hold on, the hold as
// childproc.Supervise sees it, and the one way they run it (print and wait,
// or run a command), with its exits.

// Environment variables set for the command run under a hold.
const (
	envLockName     = "COORD_LOCK_NAME"
	envLockKey      = "COORD_LOCK_KEY"
	envFencingToken = "COORD_FENCING_TOKEN"
	// envFencingScope is the scope the token fences: the lock's or the
	// election's name, or NAME#slot for a semaphore. Set by every hold, so
	// that a lock run inside a semaphore's command does not inherit the
	// semaphore's scope.
	envFencingScope = "COORD_FENCING_SCOPE"
	envSemSlot      = "COORD_SEM_SLOT"
	envElection     = "COORD_ELECTION"
	envLeaderID     = "COORD_LEADER_ID"
)

// liveness is what lock.Held, semaphore.Held and election.Leadership say
// about themselves.
type liveness interface {
	Lost() <-chan struct{}
	Err() error
	Alive() bool
}

// keyHold is a held key as childproc.Supervise sees it: its liveness, the
// session it is on, and its release.
type keyHold struct {
	liveness
	sess    *session.Session
	release func() error
}

func (h keyHold) Session() *session.Session { return h.sess }
func (h keyHold) Release() error            { return h.release() }

var _ childproc.Hold = keyHold{}

// heldRun is one hold as lock, sem and elect run it.
type heldRun struct {
	what      string // "lock NAME", "semaphore NAME slot I": in messages
	hold      childproc.Hold
	out       any // printed once held, without a command
	command   []string
	env       map[string]string
	killGrace time.Duration
	graceSet  bool // --kill-grace given: warn when it exceeds the lease's margin
	// onEnd, if set, is called when the hold's use ends, before the command
	// is stopped (elect prints its "lost" event).
	onEnd func(childproc.Outcome)
	// stop, if set, stops the command and releases the hold when closed
	// (elect's handover to a preferred candidate); without a command, ctx
	// ending does that.
	stop <-chan struct{}
}

// runHeld holds r until ctx ends (no command: release, exit 0) or the
// command exits (its status passes through), or until the hold is lost
// (exit 4). With a command, SIGINT, SIGTERM and SIGHUP are forwarded to it
// (SIGHUP as SIGTERM). It releases the hold in every case.
func (f *factory) runHeld(ctx context.Context, p *printer, r heldRun) error {
	if p != nil {
		defer f.holdOutput(p)()
	}
	if s := r.hold.Session(); s != nil && r.graceSet && len(r.command) > 0 {
		warnKillGrace(f.IO.ErrOut, r.killGrace, s.Margin())
	}
	sv := childproc.Supervision{
		Hold:  r.hold,
		What:  r.what,
		OnEnd: r.onEnd,
		Notef: func(format string, args ...any) { fmt.Fprintf(f.IO.ErrOut, "coordctl: "+format+"\n", args...) },
	}
	if len(r.command) == 0 {
		if err := p.Print(r.out); err != nil {
			_ = r.hold.Release()
			return err
		}
		sv.Stop = ctx.Done()
	} else {
		sigs, stopSigs := f.Signals()
		defer stopSigs()
		sv.Signals = sigs
		sv.Command = childproc.Config{Path: r.command[0], Args: r.command[1:], Env: r.env,
			Stdin: f.IO.In, Stdout: f.IO.Out, Stderr: f.IO.ErrOut, KillGrace: r.killGrace}
		sv.Stop = r.stop
	}
	o := childproc.Supervise(sv)
	switch {
	case o.End == childproc.StartFailed:
		return &childStartError{err: o.StartErr}
	case o.Lost != nil && len(r.command) == 0:
		return mark(errLost, fmt.Errorf("lost %s: %w", r.what, o.Lost))
	case o.Lost != nil:
		return reported(errLost) // Supervise's note said so
	case o.End == childproc.Stopped:
		if o.ReleaseErr != nil {
			return fmt.Errorf("release %s: %w", r.what, o.ReleaseErr)
		}
		return nil
	}
	if o.ReleaseErr != nil {
		fmt.Fprintf(f.IO.ErrOut, "coordctl: release %s: %v\n", r.what, o.ReleaseErr)
	}
	if o.Code != 0 {
		return &childExitError{code: o.Code}
	}
	return nil
}

// startEtcd is the start lock, sem, elect and their status subcommands
// share: the printer, the flags checked (validate) before anything is
// dialed, and an etcd client, which the caller closes.
func (f *factory) startEtcd(ctx context.Context, validate func() error) (*printer, *clientv3.Client, error) {
	p, err := f.Printer()
	if err != nil {
		return nil, nil, err
	}
	if err := validate(); err != nil {
		return nil, nil, err
	}
	client, err := f.EtcdClient(ctx)
	if err != nil {
		return nil, nil, err
	}
	return p, client, nil
}

// needName is the usage error of an empty NAME ("" when it is not).
func needName(command, name string) error {
	if strings.TrimSpace(name) == "" {
		return usageErrorf("%s needs a non-empty NAME", command)
	}
	return nil
}

// keyEnv is the environment of a command run under a held key: the name,
// the key, its token and the scope the token fences, and extra name-value
// pairs.
func keyEnv(name, key string, tok fencing.Token, scope string, extra ...string) map[string]string {
	env := map[string]string{envLockName: name, envLockKey: key, envFencingToken: tok.String(), envFencingScope: scope}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	return env
}

// holdOutput makes standard output safe for a command that holds
// something: a write to a closed pipe (coordctl lock x | true) neither kills
// coordctl (SIGPIPE is caught, so the write fails with EPIPE instead) nor
// ends the hold: the first failed write is noted on stderr and nothing more
// is printed. The command run under the hold has its own SIGPIPE. The
// returned stop restores the default.
func (f *factory) holdOutput(p *printer) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGPIPE)
	p.keepGoingOnWriteError(f.IO.ErrOut)
	return func() { signal.Stop(ch) }
}

// checkTTLFlag checks --ttl with the library's bounds, before anything is
// dialed: a usage error (exit 2).
func checkTTLFlag(ttl time.Duration) error {
	if err := session.CheckTTL(ttl); err != nil {
		return usageErrorf("invalid --ttl %s: %v", ttl, err)
	}
	return nil
}

// warnKillGrace says, before a command runs under a lease with margin
// margin, when a --kill-grace given is longer: on a loss at the local
// deadline the command is killed at the lease's earliest expiry, sooner than
// the grace. The default grace is not warned about; the help says what it
// means.
func warnKillGrace(errOut io.Writer, grace, margin time.Duration) {
	if w := childproc.GraceWarning(grace, margin); w != "" {
		fmt.Fprintf(errOut, "coordctl: warning: --kill-grace %s\n", w)
	}
}

// validateHoldFlags checks the flags lock and sem share: how long the lease
// lives, how long to wait, what a lost predecessor costs, how a command is
// stopped.
func validateHoldFlags(ttl, timeout time.Duration, try bool, lockDelay, killGrace time.Duration) error {
	if err := checkTTLFlag(ttl); err != nil {
		return err
	}
	switch {
	case timeout < 0:
		return usageErrorf("invalid --timeout %s: must not be negative", timeout)
	case try && timeout > 0:
		return usageErrorf("--try and --timeout exclude each other")
	case lockDelay < 0:
		return usageErrorf("invalid --lock-delay %s: must not be negative", lockDelay)
	case killGrace <= 0:
		return usageErrorf("invalid --kill-grace %s: must be positive", killGrace)
	}
	return nil
}

// acquireHold takes a lock or a slot as --try and --timeout say: try once
// (--try), wait for ever, or wait at most timeout — and when the timeout
// passes first, try once more, so that even --timeout 1ns takes a free
// lock. timedOut reports that the wait ended by the timeout.
func acquireHold[H any](ctx context.Context, f *factory, timeout time.Duration, try bool,
	wait, tryOnce func(context.Context) (H, error)) (h H, timedOut bool, err error) {
	if try {
		h, err = tryOnce(ctx)
		return h, false, err
	}
	if timeout <= 0 {
		h, err = wait(ctx)
		return h, false, err
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	h, err = wait(actx)
	if err == nil || ctx.Err() != nil || actx.Err() == nil {
		return h, false, err
	}
	tctx, tcancel := f.CommandContext(ctx)
	defer tcancel()
	if h, terr := tryOnce(tctx); terr == nil {
		return h, false, nil
	}
	return h, true, err
}

// holdSessionOptions are the options of the session a lock or sem
// command holds its key on. Without quorum etcd grants no lease: the grant
// fails within --command-timeout instead of waiting for one forever.
func holdSessionOptions(f *factory) []session.Option {
	return []session.Option{session.WithGrantTimeout(f.Global.CommandTimeout)}
}

// releaser returns the release of a lock's or a slot's key: unlock within
// --command-timeout, and within lockCloseGrace once lost; a key already
// lost is no error, the caller reports the loss.
func releaser(ctx context.Context, f *factory, l liveness, unlock func(context.Context) error) func() error {
	return func() error {
		uctx, cancel := f.CommandContext(context.WithoutCancel(ctx))
		defer cancel()
		if l.Err() != nil {
			// Lost: removing a key that may still be there only speeds up
			// the next holder; do not let an unreachable etcd hold up exit.
			uctx, cancel = context.WithTimeout(uctx, lockCloseGrace)
			defer cancel()
		}
		if err := unlock(uctx); err != nil && !errors.Is(err, session.ErrNotHeld) {
			return err
		}
		return nil
	}
}

// lockCloseGrace bounds the clean-up after a loss, when etcd may be gone.
const lockCloseGrace = time.Second

// waitAtMost runs fn and waits for it at most d.
func waitAtMost(d time.Duration, fn func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// waitNoticeAfter is how long a wait lasts before coordctl lock or sem says so.
const waitNoticeAfter = 500 * time.Millisecond

// waitNotice prints, once, that an acquisition has been waiting for a while
// and for whom; a short wait goes unmentioned.
type waitNotice struct {
	out   io.Writer
	mu    sync.Mutex
	timer *time.Timer
	done  bool
}

// waiting prints msg after waitNoticeAfter unless stop comes first; only
// the first call counts.
func (n *waitNotice) waiting(msg string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.done || n.timer != nil {
		return
	}
	n.timer = time.AfterFunc(waitNoticeAfter, func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		if !n.done {
			fmt.Fprintln(n.out, msg)
		}
	})
}

// stop ends the notice: nothing is printed after it returns.
func (n *waitNotice) stop() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.done = true
	if n.timer != nil {
		n.timer.Stop()
	}
}
