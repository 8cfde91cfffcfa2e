package cmdutil

import (
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Defaults of the etcd flags; the factory starts with them so that commands
// without the flags (a resource client's --command-timeout aside) still see
// sane values.
const (
	DefaultEndpoint       = "127.0.0.1:2379"
	DefaultDialTimeout    = 2 * time.Second
	DefaultCommandTimeout = 5 * time.Second
)

// AddEtcdFlags adds the etcd client flags (endpoints, timeouts, TLS, user)
// to fs. Every command that talks to etcd calls it from its constructor
// (persistent flags for a group whose subcommands all do); the others do
// not show them.
func (f *Factory) AddEtcdFlags(fs *pflag.FlagSet) {
	f.AddEndpointFlags(fs)
	fs.DurationVar(&f.Global.CommandTimeout, "command-timeout", DefaultCommandTimeout, "time limit of one etcd request")
	fs.StringVar(&f.Global.CACert, "cacert", "", "verify etcd's certificate with this CA bundle (PEM); use https:// endpoints")
	fs.StringVar(&f.Global.Cert, "cert", "", "client TLS certificate file (PEM), with --key")
	fs.StringVar(&f.Global.Key, "key", "", "client TLS key file (PEM), with --cert")
	// Not $COORDCTL_USER as the flag's default: help would print its password.
	fs.StringVar(&f.Global.User, "user", "", "etcd user as NAME:PASSWORD, or NAME with --password-stdin (an empty password is refused) (default $"+EnvUser+", which keeps the password off the command line that every user of the machine can read)")
	fs.BoolVar(&f.Global.PasswordStdin, "password-stdin", false, "read the password of --user NAME from the first line of standard input")
}

// AddEndpointFlags adds only --endpoints and --dial-timeout, for commands
// that connect to etcd without TLS or auth (scenario run).
func (f *Factory) AddEndpointFlags(fs *pflag.FlagSet) {
	def := []string{DefaultEndpoint}
	if env := strings.TrimSpace(f.Getenv("COORDCTL_ENDPOINTS")); env != "" {
		def = strings.Split(env, ",")
	}
	fs.StringSliceVar(&f.Global.Endpoints, "endpoints", def, "etcd client endpoints, comma separated: host:port or http(s)://host:port (env COORDCTL_ENDPOINTS)")
	fs.DurationVar(&f.Global.DialTimeout, "dial-timeout", DefaultDialTimeout, "time to wait for etcd to answer before giving up")
}

// CheckListen reports a usage error for a listen address with no port or a
// port outside 0-65535 (0 picks a free one).
func CheckListen(flag, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return UsageErrorf("invalid %s %q: want host:port", flag, addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return UsageErrorf("invalid %s %q: bad port %q (0-65535; 0 picks a free one)", flag, addr, port)
	}
	return nil
}
