package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/internal/etcddial"
)

// ioStreams are the streams a command reads and writes; tests inject buffers.
type ioStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// globalOptions are the flags every command has.
type globalOptions struct {
	Endpoints      []string
	DialTimeout    time.Duration
	CommandTimeout time.Duration
	CACert         string
	Cert           string
	Key            string
	User           string
	PasswordStdin  bool
	WriteOut       string
}

// factory hands commands what they need: streams, global options, the
// printer and etcd clients. One per invocation; no globals.
type factory struct {
	IO     ioStreams
	Global globalOptions
	// NotifyContext returns a context cancelled by SIGINT, SIGTERM or SIGHUP
	// (a closed terminal, a dropped ssh session); tests replace it.
	NotifyContext func(ctx context.Context) (context.Context, context.CancelFunc)
	// Getenv reads the environment; tests inject a map.
	Getenv func(string) string
	// Executable is the path of the running coordctl, for commands that re-exec it.
	Executable func() (string, error)
	// Signals delivers SIGINT, SIGTERM and SIGHUP (to forward them to a child, say)
	// until stop is called; tests replace it.
	Signals func() (ch <-chan os.Signal, stop func())
	// Dial connects to etcd for EtcdClient (etcddial.Dial); tests replace it.
	Dial func(context.Context, etcddial.Config) (*clientv3.Client, error)

	printer *printer
}

func newFactory(streams ioStreams) *factory {
	return &factory{
		IO: streams,
		Global: globalOptions{
			Endpoints:      []string{defaultEndpoint},
			DialTimeout:    defaultDialTimeout,
			CommandTimeout: defaultCommandTimeout,
			WriteOut:       formatSimple,
		},
		NotifyContext: func(ctx context.Context) (context.Context, context.CancelFunc) {
			return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		},
		Getenv:     os.Getenv,
		Executable: os.Executable,
		Dial:       etcddial.Dial,
		Signals: func() (<-chan os.Signal, func()) {
			ch := make(chan os.Signal, 4)
			signal.Notify(ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			return ch, func() { signal.Stop(ch) }
		},
	}
}

// Printer returns the printer for -w; it fails with a usage error for an unknown format.
func (f *factory) Printer() (*printer, error) {
	if f.printer != nil {
		return f.printer, nil
	}
	p, err := newPrinter(f.Global.WriteOut, f.IO.Out)
	if err != nil {
		return nil, err
	}
	f.printer = p
	return p, nil
}

// validateGlobal checks -w and, for a command that talks to etcd (it has
// the etcd flags), those flags; errors are usage errors (exit 2), found
// before anything is dialed.
func (f *factory) validateGlobal(etcd bool) error {
	if _, err := f.Printer(); err != nil {
		return err
	}
	if !etcd {
		return nil
	}
	g := f.Global
	if g.DialTimeout <= 0 {
		return usageErrorf("invalid --dial-timeout %s: must be positive", g.DialTimeout)
	}
	if g.CommandTimeout <= 0 {
		return usageErrorf("invalid --command-timeout %s: must be positive", g.CommandTimeout)
	}
	eps := f.endpoints()
	if len(eps) == 0 {
		return usageErrorf("no etcd endpoints: set --endpoints or COORDCTL_ENDPOINTS")
	}
	for _, ep := range eps {
		if err := etcddial.CheckEndpoint(ep); err != nil {
			return usageErrorf("invalid --endpoints %q: %v; want host:port or http(s)://host:port", ep, err)
		}
	}
	if err := etcddial.CheckUser(g.User, g.PasswordStdin); err != nil {
		return &usageError{err: err}
	}
	if (g.Cert == "") != (g.Key == "") {
		return usageErrorf("--cert and --key must be given together")
	}
	if err := etcddial.CheckTLSFiles(g.CACert, g.Cert, g.Key); err != nil {
		return &usageError{err: err}
	}
	return nil
}

func (f *factory) endpoints() []string {
	var eps []string
	for _, e := range f.Global.Endpoints {
		for _, part := range strings.Split(e, ",") {
			if part = strings.TrimSpace(part); part != "" {
				eps = append(eps, part)
			}
		}
	}
	return eps
}

// The errors of EtcdClient (package etcddial), under the names commands
// and tests match them by.
var (
	ErrUnreachable = etcddial.ErrUnreachable
	ErrTLS         = etcddial.ErrTLS
	ErrAuth        = etcddial.ErrAuth
)

// EtcdClient connects to the endpoints and checks, within --dial-timeout,
// that at least one answers; when none does, the error says why
// (etcddial.Dial: ErrUnreachable, ErrTLS, ErrAuth). The caller closes the
// client.
func (f *factory) EtcdClient(ctx context.Context) (*clientv3.Client, error) {
	g := f.Global
	cfg := etcddial.Config{Endpoints: f.endpoints(), DialTimeout: g.DialTimeout, CACert: g.CACert, Cert: g.Cert, Key: g.Key}
	if g.User != "" {
		cfg.Username, cfg.Password, _ = strings.Cut(g.User, ":")
		if g.PasswordStdin {
			var err error
			if cfg.Password, err = etcddial.ReadPassword(f.IO.In); err != nil {
				return nil, usageErrorf("--password-stdin: %v", err)
			}
		}
	}
	cli, err := f.Dial(ctx, cfg)
	if errors.Is(err, etcddial.ErrTLSConfig) {
		return nil, &usageError{err: err}
	}
	return cli, err
}

// CommandContext bounds one etcd request by --command-timeout.
func (f *factory) CommandContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, f.Global.CommandTimeout)
}
