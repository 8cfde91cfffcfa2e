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
	// Signals delivers SIGINT, SIGTERM, SIGHUP and SIGQUIT (to forward them to a
	// child, say) until stop is called; tests replace it.
	Signals func() (ch <-chan os.Signal, stop func())

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
		Signals: func() (<-chan os.Signal, func()) {
			ch := make(chan os.Signal, 4)
			signal.Notify(ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
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
		if err := checkEndpoint(ep); err != nil {
			return err
		}
	}
	if err := checkUser(g.User, g.PasswordStdin); err != nil {
		return err
	}
	if (g.Cert == "") != (g.Key == "") {
		return usageErrorf("--cert and --key must be given together")
	}
	return checkTLSFiles(g.CACert, g.Cert, g.Key)
}

// checkUser checks --user and --password-stdin. An empty password is never
// meant: etcd's client would skip authentication and etcd would take the
// user from the client certificate instead, if any.
func checkUser(user string, stdin bool) error {
	name, pass, hasPass := strings.Cut(user, ":")
	switch {
	case user == "" && stdin:
		return usageErrorf("--password-stdin needs --user NAME")
	case user == "":
		return nil
	case name == "":
		return usageErrorf("invalid --user %q: empty user name", user)
	case stdin && hasPass:
		return usageErrorf("invalid --user %q with --password-stdin: give the name only", user)
	case stdin:
		return nil
	case !hasPass:
		return usageErrorf("invalid --user %q: want NAME:PASSWORD, or NAME with --password-stdin", user)
	case pass == "":
		return usageErrorf("invalid --user %q: empty password (etcd would not authenticate as %s); "+
			"give NAME:PASSWORD, NAME with --password-stdin, or no --user to be the client certificate's common name", user, name)
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

// Errors of EtcdClient; each is wrapped with the endpoint and the cause in words.
var (
	// ErrUnreachable: nothing answered at any endpoint within --dial-timeout.
	ErrUnreachable = errors.New("etcd unreachable")
	// ErrTLS: an endpoint answered but the TLS handshake failed or TLS was
	// used on one side only.
	ErrTLS = errors.New("etcd TLS failed")
	// ErrAuth: etcd answered and refused the credentials.
	ErrAuth = errors.New("etcd authentication failed")
)

// EtcdClient connects to the endpoints and checks, within --dial-timeout,
// that at least one answers. When none does it finds out why from a raw
// connection to each (probe.go): ErrUnreachable when nothing answered,
// ErrTLS or ErrAuth with the cause in words when something did. The raw
// connections get --dial-timeout of their own: only an address that drops
// packets (no refusal, no answer) makes the whole take up to twice
// --dial-timeout. The caller closes the client.
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
		if f.Global.PasswordStdin {
			var err error
			if pass, err = readPasswordLine(f.IO.In); err != nil {
				return nil, usageErrorf("--password-stdin: %v", err)
			}
		}
		cfg.Username, cfg.Password = name, pass
	}
	if f.Global.CACert != "" || f.Global.Cert != "" {
		info := transport.TLSInfo{TrustedCAFile: f.Global.CACert, CertFile: f.Global.Cert, KeyFile: f.Global.Key}
		tlsCfg, err := info.ClientConfig()
		if err != nil {
			return nil, usageErrorf("TLS configuration: %v", err)
		}
		cfg.TLS = tlsCfg
	}
	cli, err := clientv3.New(cfg)
	if err == nil {
		err = probe(ctx, cli, eps, f.Global.DialTimeout)
		if err != nil {
			_ = cli.Close()
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, explainDialError(ctx, eps, cfg.TLS, cfg.Username, f.Global.DialTimeout, err)
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
	return last
}

// readPasswordLine reads one line from r, byte by byte so that nothing
// after it is consumed (a child may read the rest).
func readPasswordLine(r io.Reader) (string, error) {
	if r == nil {
		return "", errors.New("no standard input")
	}
	var line []byte
	b := make([]byte, 1)
	for {
		n, err := r.Read(b)
		if n == 1 {
			if b[0] == '\n' {
				break
			}
			line = append(line, b[0])
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
	}
	pass := strings.TrimSuffix(string(line), "\r")
	if pass == "" {
		return "", errors.New("empty password on standard input")
	}
	return pass, nil
}

// CommandContext bounds one etcd request by --command-timeout.
func (f *factory) CommandContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, f.Global.CommandTimeout)
}
