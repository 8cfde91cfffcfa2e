package sidecar

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coordkit/coordkit/internal/childproc"
	"github.com/coordkit/coordkit/internal/httpguard"
	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/session"
)

// What `coordctl sidecar` does with its flags before and after New: check
// them before anything is dialed (a standby that can never lead must not
// pass for a healthy one), turn them into a Config, and serve the API while
// the sidecar runs.

// ErrUsage is matched by the errors of Flags and ResignRequest for flags a
// user got wrong: the CLI's usage errors (exit 2). Their text is the
// message, naming the flag.
var ErrUsage = errors.New("sidecar: invalid flags")

type usageError struct{ msg string }

func (e *usageError) Error() string        { return e.msg }
func (e *usageError) Is(target error) bool { return target == ErrUsage }

func usagef(format string, args ...any) error { return &usageError{msg: fmt.Sprintf(format, args...)} }

// checkTTLFlag checks --ttl with session's bounds, as hold.CheckTTLFlag does
// for lock and sem (this package is below the command layer).
func checkTTLFlag(ttl time.Duration) error {
	if err := session.CheckTTL(ttl); err != nil {
		return usagef("invalid --ttl %s: %v", ttl, err)
	}
	return nil
}

// Flags are coordctl sidecar's flags, as given.
type Flags struct {
	Election     string
	ID           string
	Prefix       string
	Listen       string
	TTL          time.Duration
	TokenFile    string
	KillGrace    time.Duration
	Command      []string
	APITokenFile string
	// Health ties leadership to the application (--health-url,
	// --health-interval, --health-failures).
	Health HealthConfig
	// Coord are the policy and attribute flags.
	Coord CoordFlags
}

// Check checks what can be checked before ready, in this order: --ttl
// (session.CheckTTL), the required flags, --kill-grace and --listen
// (ErrUsage), a --token-file whose directory does not take a new file
// (ErrUsage), and a command that is not found or not executable
// (ErrCommand, from CheckCommand).
func (fl Flags) Check() error {
	if err := checkTTLFlag(fl.TTL); err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(fl.Election) == "":
		return usagef("--election is required")
	case strings.TrimSpace(fl.ID) == "":
		return usagef("--id is required")
	case fl.KillGrace <= 0:
		return usagef("invalid --kill-grace %s: must be positive", fl.KillGrace)
	case fl.Health.Interval < 0:
		return usagef("invalid --health-interval %s: must be positive", fl.Health.Interval)
	case fl.Health.Failures < 0:
		return usagef("invalid --health-failures %d: must be at least 1", fl.Health.Failures)
	}
	if fl.Health.URL != "" {
		if u, err := url.Parse(fl.Health.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usagef("invalid --health-url %q: want http://HOST[:PORT]/PATH", fl.Health.URL)
		}
	}
	if err := (primitive.Config{Kind: primitive.KindElection, Name: fl.Election, Prefix: fl.Prefix, TTL: fl.TTL}).Validate(); err != nil {
		return usagef("invalid --election: %v", err)
	}
	host, port, err := net.SplitHostPort(fl.Listen)
	if err != nil {
		return usagef("invalid --listen %q: %v", fl.Listen, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return usagef("invalid --listen %q: bad port %q", fl.Listen, port)
	}
	if host != "" && host != "localhost" && net.ParseIP(strings.Trim(host, "[]")) == nil {
		if _, err := net.LookupHost(host); err != nil {
			return usagef("invalid --listen %q: unknown host %q", fl.Listen, host)
		}
	}
	if fl.TokenFile != "" {
		if err := CheckTokenFile(fl.TokenFile); err != nil {
			return usagef("invalid --token-file: %v", err)
		}
	}
	if len(fl.Command) > 0 {
		return CheckCommand(fl.Command)
	}
	return nil
}

// GraceWarning is childproc.GraceWarning of --kill-grace and the lease's
// margin when a command runs, else "".
func (fl Flags) GraceWarning() string {
	if len(fl.Command) == 0 {
		return ""
	}
	return childproc.GraceWarning(fl.KillGrace, session.DefaultMargin(fl.TTL))
}

// APIToken reads --api-token-file and checks that a non-loopback --listen
// has a token: POST /v1/resign must not be open to the network. Its errors
// match ErrUsage.
func (fl Flags) APIToken() (string, error) {
	token := ""
	if fl.APITokenFile != "" {
		var err error
		if token, err = httpguard.ReadTokenFile(fl.APITokenFile); err != nil {
			return "", usagef("invalid --api-token-file: %v", err)
		}
	}
	if err := httpguard.CheckListen(fl.Listen, token); errors.Is(err, httpguard.ErrTokenRequired) {
		return "", usagef("--listen %s is not a loopback address: it needs --api-token-file FILE "+
			"(POST /v1/resign then requires that token; the GET endpoints stay open)", fl.Listen)
	} else if err != nil {
		return "", usagef("invalid --listen %q: %v", fl.Listen, err)
	}
	return token, nil
}

// Config is the part of a Config the flags give; the caller adds the
// client, the streams, the metrics, the coordination and OnChange.
func (fl Flags) Config(apiToken string) Config {
	cfg := Config{Name: fl.Election, ID: fl.ID, Prefix: fl.Prefix, TTL: fl.TTL, TokenFile: fl.TokenFile,
		KillGrace: fl.KillGrace, APIToken: apiToken, Health: fl.Health}
	if len(fl.Command) > 0 {
		cfg.Command = fl.Command
	}
	return cfg
}

// Configure is the Config the flags give, with the token of APIToken and
// the coordination of Coord.Parse (their errors match ErrUsage); the caller
// adds the client, the streams, the metrics and OnChange.
func (fl Flags) Configure() (Config, error) {
	apiToken, err := fl.APIToken()
	if err != nil {
		return Config{}, err
	}
	coord, err := fl.Coord.Parse()
	if err != nil {
		return Config{}, err
	}
	cfg := fl.Config(apiToken)
	cfg.Coordination = coord
	return cfg, nil
}

// Serve listens on listen, calls listening with the API's URL once it
// accepts connections, serves the API and runs the sidecar until ctx ends
// or Run returns (its error: a *ChildExitError when the command exited).
// If the HTTP server fails, no probe can tell the truth any more: the
// sidecar steps down and Serve returns that error.
func Serve(ctx context.Context, sc *Sidecar, listen string, listening func(url string) error) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", listen, err)
	}
	srv := &http.Server{Handler: sc.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	serving := true
	defer func() {
		sc.CloseAPI()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		if serving {
			<-served
		}
	}()
	if err := listening("http://" + ln.Addr().String()); err != nil {
		return err
	}
	runErr := make(chan error, 1)
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { runErr <- sc.Run(rctx) }()
	select {
	case err = <-runErr:
		return err
	case err = <-served:
		serving = false
		stop()
		<-runErr
		return fmt.Errorf("http server: %w", err)
	}
}
