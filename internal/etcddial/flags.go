package etcddial

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Flags are coordctl's etcd client flags as given: an element of Endpoints
// may be a comma-separated list, User is NAME:PASSWORD, or NAME with
// PasswordStdin.
type Flags struct {
	Endpoints      []string
	DialTimeout    time.Duration
	CommandTimeout time.Duration
	CACert         string
	Cert           string
	Key            string
	User           string
	PasswordStdin  bool
}

// SplitEndpoints returns the endpoints, comma-separated lists split and
// blanks dropped.
func (f Flags) SplitEndpoints() []string {
	var eps []string
	for _, e := range f.Endpoints {
		for _, part := range strings.Split(e, ",") {
			if part = strings.TrimSpace(part); part != "" {
				eps = append(eps, part)
			}
		}
	}
	return eps
}

// Validate checks the flags before anything is dialed: positive timeouts,
// at least one endpoint and each one dialable (CheckEndpoint), the user
// (CheckUser), --cert with --key, and the TLS files (CheckTLSFiles). The
// error names the flag.
func (f Flags) Validate() error {
	if f.DialTimeout <= 0 {
		return fmt.Errorf("invalid --dial-timeout %s: must be positive", f.DialTimeout)
	}
	if f.CommandTimeout <= 0 {
		return fmt.Errorf("invalid --command-timeout %s: must be positive", f.CommandTimeout)
	}
	eps := f.SplitEndpoints()
	if len(eps) == 0 {
		return errors.New("no etcd endpoints: set --endpoints or COORDCTL_ENDPOINTS")
	}
	for _, ep := range eps {
		if err := CheckEndpoint(ep); err != nil {
			return fmt.Errorf("invalid --endpoints %q: %v; want host:port or http(s)://host:port", ep, err)
		}
	}
	if err := CheckUser(f.User, f.PasswordStdin); err != nil {
		return err
	}
	if (f.Cert == "") != (f.Key == "") {
		return errors.New("--cert and --key must be given together")
	}
	return CheckTLSFiles(f.CACert, f.Cert, f.Key)
}

// Config is the Config Dial connects with; with PasswordStdin it reads the
// password from in (ReadPassword), and its error names --password-stdin.
func (f Flags) Config(in io.Reader) (Config, error) {
	cfg := Config{Endpoints: f.SplitEndpoints(), DialTimeout: f.DialTimeout, CACert: f.CACert, Cert: f.Cert, Key: f.Key}
	if f.User == "" {
		return cfg, nil
	}
	cfg.Username, cfg.Password, _ = strings.Cut(f.User, ":")
	if f.PasswordStdin {
		var err error
		if cfg.Password, err = ReadPassword(in); err != nil {
			return cfg, fmt.Errorf("--password-stdin: %w", err)
		}
	}
	return cfg, nil
}
