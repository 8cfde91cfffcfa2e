package cmdutil

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/internal/etcddial"
)

// IOStreams are the streams a command reads and writes; tests inject buffers.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// GlobalOptions are the flags every command has: etcd's and -w.
type GlobalOptions struct {
	etcddial.Flags
	WriteOut string
}

// Factory hands commands what they need: streams, global options, the
// printer and etcd clients. One per invocation; no globals.
type Factory struct {
	IO     IOStreams
	Global GlobalOptions
	// NotifyContext returns a context cancelled by SIGINT, SIGTERM or SIGHUP
	// (a closed terminal, a dropped ssh session); tests replace it.
	NotifyContext func(ctx context.Context) (context.Context, context.CancelFunc)
	// Getenv reads the environment; tests inject a map.
	Getenv func(string) string
	// Executable is the path of the running coordctl, for commands that re-exec it.
	Executable func() (string, error)
	// Signals delivers SIGINT, SIGTERM, SIGHUP and SIGQUIT (to forward them to a
	// child, say) until stop is called; tests replace it.
	Signals func() (ch <-chan os.Signal, stop func())
	// Dial connects to etcd for EtcdClient (etcddial.Dial); tests replace it.
	Dial func(context.Context, etcddial.Config) (*clientv3.Client, error)
	// Watchdog is the coordctl binary a command under a hold runs below, in
	// watchdog mode (childproc.Config.Watchdog); Main sets it to the running
	// coordctl (childproc.Self). Empty (in-process tests): the command is
	// coordctl's child.
	Watchdog string

	printer *Printer
}

// NewFactory returns coordctl's factory on streams, with the real signals,
// environment, executable and dialer, and the flags' defaults.
func NewFactory(streams IOStreams) *Factory {
	return &Factory{
		IO: streams,
		Global: GlobalOptions{
			Flags:    etcddial.Flags{Endpoints: []string{DefaultEndpoint}, DialTimeout: DefaultDialTimeout, CommandTimeout: DefaultCommandTimeout},
			WriteOut: FormatSimple,
		},
		NotifyContext: func(ctx context.Context) (context.Context, context.CancelFunc) {
			return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		},
		Getenv:     os.Getenv,
		Executable: os.Executable,
		Dial:       etcddial.Dial,
		Signals: func() (<-chan os.Signal, func()) {
			ch := make(chan os.Signal, 4)
			signal.Notify(ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
			return ch, func() { signal.Stop(ch) }
		},
	}
}

// Printer returns the printer for -w; it fails with a usage error for an unknown format.
func (f *Factory) Printer() (*Printer, error) {
	if f.printer != nil {
		return f.printer, nil
	}
	p, err := NewPrinter(f.Global.WriteOut, f.IO.Out)
	if err != nil {
		return nil, err
	}
	f.printer = p
	return p, nil
}

// ValidateGlobal checks -w and, for a command that talks to etcd (it has
// the etcd flags), those flags (etcddial.Flags.Validate); errors are usage
// errors (exit 2), found before anything is dialed.
func (f *Factory) ValidateGlobal(etcd bool) error {
	if _, err := f.Printer(); err != nil {
		return err
	}
	if !etcd {
		return nil
	}
	if f.Global.User == "" {
		f.Global.User = f.Getenv(EnvUser)
	}
	if err := f.Global.Validate(); err != nil {
		return &UsageError{Err: err}
	}
	return nil
}

// EtcdClient connects to the endpoints and checks, within --dial-timeout,
// that at least one answers; when none does, the error says why
// (etcddial.Dial: ErrUnreachable, ErrTLS, ErrAuth). The caller closes the
// client.
func (f *Factory) EtcdClient(ctx context.Context) (*clientv3.Client, error) {
	dial, err := f.EtcdDialer()
	if err != nil {
		return nil, err
	}
	return dial(ctx)
}

// EtcdDialer reads the etcd flags once (--password-stdin reads stdin) and
// returns a function that dials as EtcdClient does, as often as it is
// called: for a command that retries until etcd answers. A flag that does
// not make a configuration is a usage error, here or from the dial.
func (f *Factory) EtcdDialer() (func(context.Context) (*clientv3.Client, error), error) {
	cfg, err := f.Global.Config(f.IO.In)
	if err != nil {
		return nil, &UsageError{Err: err}
	}
	return func(ctx context.Context) (*clientv3.Client, error) {
		cli, err := f.Dial(ctx, cfg)
		if errors.Is(err, etcddial.ErrTLSConfig) {
			return nil, &UsageError{Err: err}
		}
		return cli, err
	}, nil
}

// CommandContext bounds one etcd request by --command-timeout.
func (f *Factory) CommandContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, f.Global.CommandTimeout)
}
