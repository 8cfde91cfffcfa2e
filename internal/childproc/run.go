package childproc

import (
	"context"
	"io"
	"os"
	"time"
)

// Run is a hold and what runs under it, as coordctl lock, sem, elect and
// check run it: a command (Command, with Env over the inherited
// environment), or, without one, nothing until Stop.
type Run struct {
	Hold Hold
	// What names the hold in notes: "lock jobs/nightly".
	What      string
	Command   []string
	Env       map[string]string
	KillGrace time.Duration
	// Watchdog is Config.Watchdog: the coordctl binary whose watchdog mode
	// is the command's parent; empty for none.
	Watchdog string
	Stdin    io.Reader
	Stdout   io.Writer
	Stderr   io.Writer
	// Signals are forwarded to the command (Supervision.Signals).
	Signals <-chan os.Signal
	// Stop stops the command, or ends a hold without one, and releases.
	Stop <-chan struct{}
	// OnEnd is Supervision.OnEnd: called once when the hold's use ends,
	// before the command is stopped (coordctl elect prints its "lost" event).
	OnEnd func(Outcome)
	Notef func(format string, args ...any)
	// Out, if set, is called once without a command, before holding
	// (coordctl prints the holder).
	Out func() error
}

// Execute runs r: without a command it calls Out and holds until ctx ends
// (Stop is ctx's), with one it runs it under the hold (Supervise). An Out
// error releases the hold and is Execute's error.
func (r Run) Execute(ctx context.Context) (Outcome, error) {
	if len(r.Command) == 0 {
		if r.Out != nil {
			if err := r.Out(); err != nil {
				_ = r.Hold.Release()
				return Outcome{}, err
			}
		}
		r.Stop = ctx.Done()
	}
	return Supervise(r.Supervision()), nil
}

// Supervision is r as Supervise takes it.
func (r Run) Supervision() Supervision {
	sv := Supervision{Hold: r.Hold, What: r.What, Signals: r.Signals, Stop: r.Stop, OnEnd: r.OnEnd, Notef: r.Notef}
	if len(r.Command) > 0 {
		sv.Command = Config{Path: r.Command[0], Args: r.Command[1:], Env: r.Env,
			Stdin: r.Stdin, Stdout: r.Stdout, Stderr: r.Stderr, KillGrace: r.KillGrace, Watchdog: r.Watchdog}
	}
	return sv
}

// GraceWarning is GraceWarning of r's kill grace and its session's margin
// when a command runs under a hold on a session, and "" otherwise.
func (r Run) GraceWarning() string {
	s := r.Hold.Session()
	if s == nil || len(r.Command) == 0 {
		return ""
	}
	return GraceWarning(r.KillGrace, s.Margin())
}
