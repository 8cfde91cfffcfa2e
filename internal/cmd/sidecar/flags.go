package sidecarcmd

import (
	"errors"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coordkit/coordkit/internal/childproc"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil/hold"
	"github.com/coordkit/coordkit/internal/etcddial"
	"github.com/coordkit/coordkit/internal/httpguard"
	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/internal/sidecar"
	"github.com/coordkit/coordkit/session"
)

// What coordctl sidecar does with its flags before internal/sidecar.New:
// check them before anything is dialed (a standby that can never lead must
// not pass for a healthy one) and turn them into a sidecar.Config.

// sidecarOptions are coordctl sidecar's flags, as given.
type sidecarOptions struct {
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
	Health sidecar.HealthConfig
	// Coord are the policy and attribute flags.
	Coord hold.CoordFlags
	// KillGraceSet: --kill-grace was given (warn when it exceeds the
	// lease's margin).
	KillGraceSet bool
	// StartTimeout bounds the wait for etcd at start (--start-timeout);
	// zero: wait as long as it takes.
	StartTimeout time.Duration
	// CoordAPI (--api) mounts the coordination API (internal/coordapi) on
	// the sidecar's listener.
	CoordAPI bool
}

// Check checks what can be checked before ready, in this order: --ttl
// (session.CheckTTL), the required flags, --kill-grace and --listen, a
// --token-file whose directory does not take a new file (each a
// cmdutil.UsageError naming the flag), and a command that is not found or
// not executable (a cmdutil.ChildStartError: exit 127 or 126).
func (fl sidecarOptions) Check() error {
	if err := hold.CheckTTLFlag(fl.TTL); err != nil {
		return cmdutil.UsageOrNil(err)
	}
	switch {
	case strings.TrimSpace(fl.Election) == "":
		return cmdutil.UsageErrorf("--election is required")
	case strings.TrimSpace(fl.ID) == "":
		return cmdutil.UsageErrorf("--id is required")
	case fl.KillGrace <= 0:
		return cmdutil.UsageErrorf("invalid --kill-grace %s: must be positive", fl.KillGrace)
	case fl.Health.Interval < 0:
		return cmdutil.UsageErrorf("invalid --health-interval %s: must be positive", fl.Health.Interval)
	case fl.Health.Failures < 0:
		return cmdutil.UsageErrorf("invalid --health-failures %d: must be at least 1", fl.Health.Failures)
	case fl.StartTimeout < 0:
		return cmdutil.UsageErrorf("invalid --start-timeout %s: must be 0 (wait for etcd as long as it takes) or positive", fl.StartTimeout)
	}
	if fl.Health.URL != "" {
		if u, err := url.Parse(fl.Health.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return cmdutil.UsageErrorf("invalid --health-url %q: want http://HOST[:PORT]/PATH", fl.Health.URL)
		}
	}
	if err := (primitive.Config{Kind: primitive.KindElection, Name: fl.Election, Prefix: fl.Prefix, TTL: fl.TTL}).Validate(); err != nil {
		return cmdutil.UsageErrorf("invalid --election: %v", err)
	}
	host, port, err := net.SplitHostPort(fl.Listen)
	if err != nil {
		return cmdutil.UsageErrorf("invalid --listen %q: %v", fl.Listen, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return cmdutil.UsageErrorf("invalid --listen %q: bad port %q", fl.Listen, port)
	}
	if host != "" && host != "localhost" && net.ParseIP(strings.Trim(host, "[]")) == nil {
		if _, err := net.LookupHost(host); err != nil {
			return cmdutil.UsageErrorf("invalid --listen %q: unknown host %q", fl.Listen, host)
		}
	}
	if fl.TokenFile != "" {
		if err := sidecar.CheckTokenFile(fl.TokenFile); err != nil {
			return cmdutil.UsageErrorf("invalid --token-file: %v", err)
		}
	}
	if len(fl.Command) > 0 {
		if err := sidecar.CheckCommand(fl.Command); err != nil {
			return &cmdutil.ChildStartError{Err: err}
		}
	}
	return nil
}

// GraceWarning is childproc.GraceWarning of --kill-grace and the lease's
// margin when a command runs, else "".
func (fl sidecarOptions) GraceWarning() string {
	if len(fl.Command) == 0 {
		return ""
	}
	return childproc.GraceWarning(fl.KillGrace, session.DefaultMargin(fl.TTL))
}

// APIToken reads --api-token-file (read again when it changes: notify is
// told, see httpguard.ReadSecret) and checks that a non-loopback --listen
// has a token: POST /v1/resign must not be open to the network. Its errors
// are usage errors.
func (fl sidecarOptions) APIToken(notify func(string)) (*httpguard.Secret, error) {
	secret := httpguard.NewSecret("")
	if fl.APITokenFile != "" {
		var err error
		if secret, err = httpguard.ReadSecret(fl.APITokenFile, notify); err != nil {
			return nil, cmdutil.UsageErrorf("invalid --api-token-file: %v", err)
		}
	}
	if err := httpguard.CheckListen(fl.Listen, secret.Required()); errors.Is(err, httpguard.ErrTokenRequired) {
		return nil, cmdutil.UsageErrorf("--listen %s is not a loopback address: it needs --api-token-file FILE "+
			"(POST /v1/resign then requires that token; the GET endpoints stay open)", fl.Listen)
	} else if err != nil {
		return nil, cmdutil.UsageErrorf("invalid --listen %q: %v", fl.Listen, err)
	}
	return secret, nil
}

// config is the part of a sidecar.Config the flags give; the caller adds
// the dialer, the streams, the metrics, the coordination and OnChange.
func (fl sidecarOptions) config(apiToken *httpguard.Secret) sidecar.Config {
	cfg := sidecar.Config{Name: fl.Election, ID: fl.ID, Prefix: fl.Prefix, TTL: fl.TTL, TokenFile: fl.TokenFile,
		KillGrace: fl.KillGrace, APIToken: apiToken, Health: fl.Health, Connect: etcddial.Connect{Timeout: fl.StartTimeout}}
	if len(fl.Command) > 0 {
		cfg.Command = fl.Command
	}
	return cfg
}

// Configure is the sidecar.Config the flags give, with the token of
// APIToken (notify: see there) and the coordination of Coord.Parse (usage
// errors); the caller adds the dialer, the streams, the metrics and
// OnChange.
func (fl sidecarOptions) Configure(notify func(string)) (sidecar.Config, error) {
	apiToken, err := fl.APIToken(notify)
	if err != nil {
		return sidecar.Config{}, err
	}
	coord, err := fl.Coord.Parse()
	if err != nil {
		return sidecar.Config{}, err
	}
	cfg := fl.config(apiToken)
	cfg.Coordination = coord
	return cfg, nil
}
