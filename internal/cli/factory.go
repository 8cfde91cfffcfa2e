package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
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
	WriteOut       string
}

// factory hands commands what they need: streams, global options, the
// printer and etcd clients. One per invocation; no globals.
type factory struct {
	IO     ioStreams
	Global globalOptions
	// NotifyContext returns a context cancelled by SIGINT/SIGTERM; tests replace it.
	NotifyContext func(ctx context.Context) (context.Context, context.CancelFunc)
	// Getenv reads the environment; tests inject a map.
	Getenv func(string) string
	// Executable is the path of the running coordctl, for commands that re-exec it.
	Executable func() (string, error)
	// Signals delivers SIGINT and SIGTERM (to forward them to a child, say)
	// until stop is called; tests replace it.
	Signals func() (ch <-chan os.Signal, stop func())

	printer *printer
}

func newFactory(streams ioStreams) *factory {
	return &factory{
		IO: streams,
		NotifyContext: func(ctx context.Context) (context.Context, context.CancelFunc) {
			return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		},
		Getenv:     os.Getenv,
		Executable: os.Executable,
		Signals: func() (<-chan os.Signal, func()) {
			ch := make(chan os.Signal, 4)
			signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
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

// validateGlobal checks the global flags; errors are usage errors (exit 2).
func (f *factory) validateGlobal() error {
	if _, err := f.Printer(); err != nil {
		return err
	}
	g := f.Global
	if g.DialTimeout <= 0 {
		return usageErrorf("invalid --dial-timeout %s: must be positive", g.DialTimeout)
	}
	if g.CommandTimeout <= 0 {
		return usageErrorf("invalid --command-timeout %s: must be positive", g.CommandTimeout)
	}
	if len(f.endpoints()) == 0 {
		return usageErrorf("no etcd endpoints: set --endpoints or COORDCTL_ENDPOINTS")
	}
	if g.User != "" && !strings.Contains(g.User, ":") {
		return usageErrorf("invalid --user %q: want name:password", g.User)
	}
	if (g.Cert == "") != (g.Key == "") {
		return usageErrorf("--cert and --key must be given together")
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

// ErrUnreachable is returned when no etcd endpoint answers within the dial timeout.
var ErrUnreachable = errors.New("etcd unreachable")

// EtcdClient connects to the endpoints and checks, within --dial-timeout,
// that at least one answers; otherwise it returns an error wrapping
// ErrUnreachable that names the endpoints. The caller closes the client.
func (f *factory) EtcdClient(ctx context.Context) (*clientv3.Client, error) {
	eps := f.endpoints()
	cfg := clientv3.Config{
		Endpoints:            eps,
		DialTimeout:          f.Global.DialTimeout,
		DialKeepAliveTime:    2 * time.Second,
		DialKeepAliveTimeout: f.Global.DialTimeout,
		Logger:               zap.NewNop(),
		Context:              ctx,
	}
	if f.Global.User != "" {
		name, pass, _ := strings.Cut(f.Global.User, ":")
		cfg.Username, cfg.Password = name, pass
	}
	if f.Global.CACert != "" || f.Global.Cert != "" {
		info := transport.TLSInfo{TrustedCAFile: f.Global.CACert, CertFile: f.Global.Cert, KeyFile: f.Global.Key}
		var tlsCfg *tls.Config
		var err error
		if tlsCfg, err = info.ClientConfig(); err != nil {
			return nil, fmt.Errorf("TLS configuration: %w", err)
		}
		cfg.TLS = tlsCfg
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w at %s: %v", ErrUnreachable, strings.Join(eps, ","), err)
	}
	if err := probe(ctx, cli, eps, f.Global.DialTimeout); err != nil {
		_ = cli.Close()
		return nil, err
	}
	return cli, nil
}

// probe asks every endpoint for its status until one answers or the dial
// timeout passes. clientv3.New does not block, so without it the first
// request would wait for the command timeout instead.
func probe(ctx context.Context, cli *clientv3.Client, eps []string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	errs := make(chan error, len(eps))
	for _, ep := range eps {
		go func() {
			_, err := cli.Status(ctx, ep)
			errs <- err
		}()
	}
	var last error
	for range eps {
		err := <-errs
		if err == nil {
			return nil
		}
		last = err
	}
	if ctx.Err() != nil && errors.Is(last, context.DeadlineExceeded) || last == nil {
		last = fmt.Errorf("no answer within %s", timeout)
	}
	return fmt.Errorf("%w at %s: %v", ErrUnreachable, strings.Join(eps, ","), last)
}

// CommandContext bounds one etcd request by --command-timeout.
func (f *factory) CommandContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, f.Global.CommandTimeout)
}
