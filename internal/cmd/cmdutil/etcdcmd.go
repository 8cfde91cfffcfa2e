package cmdutil

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/internal/primitive"
)

// What every command that dials etcd or prints a result once shares; the
// holds of lock, sem and elect are package hold's.

// CheckConfig checks, before anything is dialled, what the library would
// refuse (primitive.Config's rules: the name and prefix, TTL, lock delay,
// limit): a usage error (exit 2) naming the rule.
func CheckConfig(cfg primitive.Config) error {
	if err := cfg.Validate(); err != nil {
		return UsageErrorf("%v", err)
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
