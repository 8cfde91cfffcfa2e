package cmdutil

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/internal/childproc"
	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/session"
)

// What lock, sem and elect share: the lease they hold on, the hold as
// childproc.Supervise sees it, and the one way they run it (print and wait,
// or run a command), with its exits.

// HoldOptions are the options lock and sem share.
type HoldOptions struct {
	Name string
	childproc.HoldFlags
	KillGraceSet bool // --kill-grace given: warn when it exceeds the margin
	Prefix       string
	Command      []string
}

// Bind sets lock's and sem's Args and RunE: NAME (or --name), then the
// command after '--', then run until a signal.
func (o *HoldOptions) Bind(f *Factory, cmd *cobra.Command, what string, nameFlag *string, run func(context.Context) error) {
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		_, _, err := nameAndCommand(what, cmd, args, *nameFlag)
		return err
	}
	cmd.RunE = SignalRunE(f, func(ctx context.Context, cmd *cobra.Command, args []string) error {
		o.Name, o.Command, _ = nameAndCommand(what, cmd, args, *nameFlag)
		o.KillGraceSet = cmd.Flags().Changed("kill-grace")
		return run(ctx)
	})
}

// nameAndCommand splits the arguments of lock and sem: NAME (or --name),
// then the command after '--'. what names the command in errors.
func nameAndCommand(what string, cmd *cobra.Command, args []string, nameFlag string) (string, []string, error) {
	name, command, err := childproc.NameAndCommand(what, args, cmd.ArgsLenAtDash(), nameFlag)
	return name, command, UsageOrNil(err)
}

// ValidateHold checks the name, the hold flags and cfg (CheckConfig) before
// anything is dialled; what names the command in errors.
func (o *HoldOptions) ValidateHold(what string, cfg primitive.Config) error {
	if err := NeedName(what, o.Name); err != nil {
		return err
	}
	if err := o.HoldFlags.Validate(); err != nil {
		return UsageOrNil(err)
	}
	return CheckConfig(cfg)
}

// PrimitiveConfig is the library's configuration of what the flags hold (limit: a
// semaphore's, 0 for a lock).
func (o *HoldOptions) PrimitiveConfig(kind primitive.Kind, limit int) primitive.Config {
	return primitive.Config{Kind: kind, Name: o.Name, Prefix: o.Prefix, TTL: o.TTL, LockDelay: o.LockDelay, Limit: limit}
}

// CheckConfig checks, before anything is dialled, what the library would
// refuse (primitive.Config's rules: the name and prefix, TTL, lock delay,
// limit): a usage error (exit 2) naming the rule.
func CheckConfig(cfg primitive.Config) error {
	if err := cfg.Validate(); err != nil {
		return UsageErrorf("%v", err)
	}
	return nil
}

// RunHeldKey runs a lock's or a slot's key as the flags say (RunHeld),
// released by release within --command-timeout.
func (f *Factory) RunHeldKey(ctx context.Context, p *Printer, o *HoldOptions, what string,
	held interface {
		childproc.Liveness
		Session() *session.Session
	}, release func(context.Context) error, out any, env map[string]string) error {
	return f.RunHeld(ctx, p, childproc.Run{What: what, Env: env, Command: o.Command, KillGrace: o.KillGrace,
		Hold: childproc.KeyHold{Liveness: held, Sess: held.Session(), ReleaseFunc: f.Releaser(ctx, held, release)}},
		out, o.KillGraceSet)
}

// RunHeld runs run, one hold as lock, sem and elect run it, until ctx ends
// (no command: release, exit 0) or the command exits (its status passes
// through), or until the hold is lost (exit 4). It fills in what coordctl
// gives every hold: its streams, its notes, out printed once held without
// a command, and with a command SIGINT, SIGTERM, SIGHUP and SIGQUIT forwarded to it
// (SIGHUP as SIGTERM), and $COORDCTL_ENDPOINTS set for it to the hold's
// endpoints. graceSet (--kill-grace given) warns when the grace
// exceeds the lease's margin. It releases the hold in every case.
func (f *Factory) RunHeld(ctx context.Context, p *Printer, run childproc.Run, out any, graceSet bool) error {
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
		if _, set := run.Env[EnvEndpoints]; !set {
			run.Env[EnvEndpoints] = strings.Join(f.Global.SplitEndpoints(), ",")
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
		return &ChildStartError{Err: o.StartErr}
	case o.Lost != nil && len(run.Command) == 0:
		return Mark(ErrLost, fmt.Errorf("lost %s: %w", run.What, o.Lost))
	case o.Lost != nil:
		return Reported(ErrLost) // Supervise's note said so
	case o.End == childproc.Stopped:
		if o.ReleaseErr != nil {
			return fmt.Errorf("release %s: %w", run.What, o.ReleaseErr)
		}
		return nil
	}
	if o.ReleaseErr != nil {
		fmt.Fprintf(f.IO.ErrOut, "coordctl: release %s: %v\n", run.What, o.ReleaseErr)
	}
	if o.Code != 0 {
		return &ChildExitError{Code: o.Code}
	}
	return nil
}

// StartEtcd is the start lock, sem, elect and their status subcommands
// share: the printer, the flags checked (validate) before anything is
// dialed, and an etcd client, which the caller closes.
func (f *Factory) StartEtcd(ctx context.Context, validate func() error) (*Printer, *clientv3.Client, error) {
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

// EtcdCall runs a one-request command (lock/sem status, set-limit, delete,
// claim): the printer, the arguments checked (validate, may be nil) before
// anything is dialed, fn with a client and a context bounded by
// --command-timeout; a closed stdout does not change the exit (HoldOutput).
func (f *Factory) EtcdCall(ctx context.Context, validate func() error, fn func(context.Context, *Printer, *clientv3.Client) error) error {
	if validate == nil {
		validate = func() error { return nil }
	}
	p, client, err := f.StartEtcd(ctx, validate)
	if err != nil {
		return err
	}
	defer client.Close()
	_ = f.HoldOutput(p)
	cctx, cancel := f.CommandContext(ctx)
	defer cancel()
	return fn(cctx, p, client)
}

// NeedName is the usage error of an empty NAME ("" when it is not).
func NeedName(command, name string) error {
	if strings.TrimSpace(name) == "" {
		return UsageErrorf("%s needs a non-empty NAME", command)
	}
	return nil
}

// HoldOutput keeps a closed stdout (coordctl lock x | true) from killing
// coordctl, ending a hold or changing an exit that reports a write (sql,
// EtcdCall's commands): SIGPIPE is caught, the first failed write is noted
// on stderr and nothing more is printed. The command under a hold has its
// own SIGPIPE. stop restores the default; one-shot commands never call it.
func (f *Factory) HoldOutput(p *Printer) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGPIPE)
	p.KeepGoingOnWriteError(f.IO.ErrOut)
	return func() { signal.Stop(ch) }
}

// UsageOrNil is err, if any, as a usage error (exit 2).
func UsageOrNil(err error) error {
	if err != nil {
		return &UsageError{Err: err}
	}
	return nil
}

// WarnKillGrace says, before a command runs under a lease, that a
// --kill-grace given is longer than its margin (w, childproc.GraceWarning):
// on a loss at the local deadline the command is killed at the lease's
// earliest expiry, sooner than the grace. The default grace is not warned
// about; the help says what it means.
func WarnKillGrace(errOut io.Writer, w string) {
	fmt.Fprintf(errOut, "coordctl: warning: --kill-grace %s\n", w)
}

// HoldSessionOptions are the options of the session a lock or sem
// command holds its key on. Without quorum etcd grants no lease: the grant
// fails within --command-timeout instead of waiting for one forever.
func HoldSessionOptions(f *Factory) []session.Option {
	return []session.Option{session.WithGrantTimeout(f.Global.CommandTimeout)}
}

// Acquisition is how lock and sem take their hold, from --timeout and
// --try; the last try after a timeout gets --command-timeout.
func (f *Factory) Acquisition(h childproc.HoldFlags) childproc.Acquisition {
	return childproc.Acquisition{Timeout: h.Timeout, Try: h.Try, LastTry: f.Global.CommandTimeout}
}

// Releaser is childproc.Releaser within --command-timeout.
func (f *Factory) Releaser(ctx context.Context, l childproc.Liveness, unlock func(context.Context) error) func() error {
	return childproc.Releaser(ctx, l, f.Global.CommandTimeout, unlock)
}
