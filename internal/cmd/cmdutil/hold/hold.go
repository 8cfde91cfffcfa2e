package hold

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/childproc"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/session"
)

// What lock, sem and elect share: the lease they hold on, the hold as
// childproc.Supervise sees it, and the one way they run it (print and wait,
// or run a command), with its exits.

// Options are the options lock and sem share.
type Options struct {
	Name string
	Flags
	KillGraceSet bool // --kill-grace given: warn when it exceeds the margin
	Prefix       string
	Command      []string
}

// Bind sets lock's and sem's Args and RunE: NAME (or --name), then the
// command after '--', then run until a signal.
func (o *Options) Bind(f *cmdutil.Factory, cmd *cobra.Command, what string, nameFlag *string, run func(context.Context) error) {
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		_, _, err := nameAndCommand(what, cmd, args, *nameFlag)
		return err
	}
	cmd.RunE = cmdutil.SignalRunE(f, func(ctx context.Context, cmd *cobra.Command, args []string) error {
		o.Name, o.Command, _ = nameAndCommand(what, cmd, args, *nameFlag)
		o.KillGraceSet = cmd.Flags().Changed("kill-grace")
		return run(ctx)
	})
}

// nameAndCommand splits the arguments of lock and sem: NAME (or --name),
// then the command after '--'. what names the command in errors.
func nameAndCommand(what string, cmd *cobra.Command, args []string, nameFlag string) (string, []string, error) {
	name, command, err := NameAndCommand(what, args, cmd.ArgsLenAtDash(), nameFlag)
	return name, command, cmdutil.UsageOrNil(err)
}

// ValidateHold checks the name, the hold flags and cfg (CheckConfig) before
// anything is dialled; what names the command in errors.
func (o *Options) ValidateHold(what string, cfg primitive.Config) error {
	if err := cmdutil.NeedName(what, o.Name); err != nil {
		return err
	}
	if err := o.Flags.Validate(); err != nil {
		return cmdutil.UsageOrNil(err)
	}
	return cmdutil.CheckConfig(cfg)
}

// PrimitiveConfig is the library's configuration of what the flags hold (limit: a
// semaphore's, 0 for a lock).
func (o *Options) PrimitiveConfig(kind primitive.Kind, limit int) primitive.Config {
	return primitive.Config{Kind: kind, Name: o.Name, Prefix: o.Prefix, TTL: o.TTL, LockDelay: o.LockDelay, Limit: limit}
}

// RunKey runs a lock's or a slot's key as the flags say (Run),
// released by release within --command-timeout.
func RunKey(ctx context.Context, f *cmdutil.Factory, p *cmdutil.Printer, o *Options, what string,
	held interface {
		childproc.Liveness
		Session() *session.Session
	}, release func(context.Context) error, out any, env map[string]string) error {
	return Run(ctx, f, p, childproc.Run{What: what, Env: env, Command: o.Command, KillGrace: o.KillGrace,
		Hold: childproc.KeyHold{Liveness: held, Sess: held.Session(), ReleaseFunc: Releaser(ctx, f, held, release)}},
		out, o.KillGraceSet)
}

// Run runs run, one hold as lock, sem and elect run it, until ctx ends
// (no command: release, exit 0) or the command exits (its status passes
// through), or until the hold is lost (exit 4). It fills in what coordctl
// gives every hold: its streams, its notes, out printed once held without
// a command, and with a command SIGINT, SIGTERM, SIGHUP and SIGQUIT forwarded to it
// (SIGHUP as SIGTERM), and $COORDCTL_ENDPOINTS set for it to the hold's
// endpoints. graceSet (--kill-grace given) warns when the grace
// exceeds the lease's margin. It releases the hold in every case.
func Run(ctx context.Context, f *cmdutil.Factory, p *cmdutil.Printer, run childproc.Run, out any, graceSet bool) error {
	if p != nil {
		defer f.HoldOutput(p)()
	}
	run.Stdin, run.Stdout, run.Stderr = f.IO.In, f.IO.Out, f.IO.ErrOut
	run.Watchdog = f.Watchdog
	if len(run.Command) > 0 {
		// The command's coordctl asks the etcd of the hold (a refusal as
		// stale compares the floor with its revision: RestoreHint).
		if run.Env == nil {
			run.Env = map[string]string{}
		}
		if _, set := run.Env[cmdutil.EnvEndpoints]; !set {
			run.Env[cmdutil.EnvEndpoints] = strings.Join(f.Global.SplitEndpoints(), ",")
		}
	}
	run.Out = func() error { return p.Print(out) }
	run.Notef = func(format string, args ...any) { fmt.Fprintf(f.IO.ErrOut, "coordctl: "+format+"\n", args...) }
	if w := run.GraceWarning(); w != "" && graceSet {
		WarnKillGrace(f.IO.ErrOut, w)
	}
	if len(run.Command) > 0 {
		sigs, stopSigs := f.Signals()
		defer stopSigs()
		run.Signals = sigs
	}
	o, err := run.Execute(ctx)
	switch {
	case err != nil:
		return err
	case o.End == childproc.StartFailed:
		return &cmdutil.ChildStartError{Err: o.StartErr}
	case o.Lost != nil && len(run.Command) == 0:
		return cmdutil.Mark(cmdutil.ErrLost, fmt.Errorf("lost %s: %w", run.What, o.Lost))
	case o.Lost != nil:
		return cmdutil.Reported(cmdutil.ErrLost) // Supervise's note said so
	case o.End == childproc.Stopped:
		if o.ReleaseErr != nil {
			return releaseFailed(run.What, o.ReleaseErr) // the deadline's hint is added where it is printed
		}
		return nil
	}
	if o.ReleaseErr != nil {
		// A note: the exit status is the command's.
		err := releaseFailed(run.What, o.ReleaseErr)
		hint := ""
		if errors.Is(err, context.DeadlineExceeded) {
			hint = cmdutil.EtcdSilentHint
		}
		fmt.Fprintf(f.IO.ErrOut, "coordctl: %v%s\n", err, hint)
	}
	if o.Code != 0 {
		return &cmdutil.ChildExitError{Code: o.Code}
	}
	return nil
}

// releaseFailed is a release that failed, as coordctl reports it: when
// etcd did not answer, the key is still there, and goes with the lease.
func releaseFailed(what string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("release %s: %w; the key goes when its lease expires, at most --ttl after etcd last heard from coordctl", what, err)
	}
	return fmt.Errorf("release %s: %w", what, err)
}

// SessionOptions are the options of the session a lock or sem
// command holds its key on. Without quorum etcd grants no lease: the grant
// fails within --command-timeout instead of waiting for one forever.
func SessionOptions(f *cmdutil.Factory) []session.Option {
	return []session.Option{session.WithGrantTimeout(f.Global.CommandTimeout)}
}

// AcquisitionOf is how lock and sem take their hold, from --timeout and
// --try; the last try after a timeout gets --command-timeout, and notice
// (nil for none) says so when the wait is long.
func AcquisitionOf(f *cmdutil.Factory, h Flags, notice *WaitNotice) Acquisition {
	return Acquisition{Timeout: h.Timeout, Try: h.Try, LastTry: f.Global.CommandTimeout, Notice: notice}
}

// Releaser is childproc.Releaser within --command-timeout.
func Releaser(ctx context.Context, f *cmdutil.Factory, l childproc.Liveness, unlock func(context.Context) error) func() error {
	return childproc.Releaser(ctx, l, f.Global.CommandTimeout, unlock)
}

// WarnKillGrace says, before a command runs under a lease, that a
// --kill-grace given is longer than its margin (w, childproc.GraceWarning):
// on a loss at the local deadline the command is killed at the lease's
// earliest expiry, sooner than the grace. The default grace is not warned
// about; the help says what it means.
func WarnKillGrace(errOut io.Writer, w string) {
	fmt.Fprintf(errOut, "coordctl: warning: --kill-grace %s\n", w)
}
