package electcmd

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil/hold"
	"github.com/coordkit/coordkit/internal/primitive"
)

// electOptions are coordctl elect's flags and arguments, as given: a
// candidate (PROPOSAL or --id, optionally a command to run while leading),
// an observer (--observe) or a look at the queue (--candidates).
type electOptions struct {
	Name      string
	Proposal  string
	ID        string
	TTL       time.Duration
	Prefix    string
	Observe   bool
	KillGrace time.Duration
	Command   []string
	// Coord are the policy and attribute flags; Candidates lists the
	// queue instead of campaigning.
	Coord      hold.CoordFlags
	Candidates bool
	// KillGraceSet: --kill-grace was given (warn when it exceeds the
	// lease's margin).
	KillGraceSet bool
}

// Validate checks the flags before anything is dialed, in this order:
// --ttl, NAME (and --prefix: the library's rules, primitive.Config), the flags that exclude each other, --kill-grace, then the
// policy and attribute flags (CoordFlags.Parse). Every error is a
// cmdutil.UsageError naming the flag.
func (o electOptions) Validate() error {
	if err := hold.CheckTTLFlag(o.TTL); err != nil {
		return cmdutil.UsageOrNil(err)
	}
	if strings.TrimSpace(o.Name) == "" {
		return cmdutil.UsageErrorf("elect needs a non-empty NAME")
	}
	if err := (primitive.Config{Kind: primitive.KindElection, Name: o.Name, Prefix: o.Prefix, TTL: o.TTL}).Validate(); err != nil {
		return &cmdutil.UsageError{Err: err}
	}
	switch {
	case o.Proposal != "" && o.ID != "":
		return cmdutil.UsageErrorf("give either PROPOSAL or --id, not both")
	case o.Observe && (o.Proposal != "" || o.ID != ""):
		return cmdutil.UsageErrorf("--observe campaigns for nothing: it takes no PROPOSAL or --id")
	case o.Observe && len(o.Command) > 0:
		return cmdutil.UsageErrorf("--observe campaigns for nothing: it runs no command")
	case o.KillGrace <= 0:
		return cmdutil.UsageErrorf("invalid --kill-grace %s: must be positive", o.KillGrace)
	case o.Candidates && (o.Observe || o.Proposal != "" || o.ID != ""):
		return cmdutil.UsageErrorf("--candidates lists the queue: it takes no PROPOSAL, --id or --observe")
	case (o.Candidates || o.Observe) && o.Coord.Given():
		return cmdutil.UsageErrorf("--policy, --priority, --version and --label are a candidate's: not with --candidates or --observe")
	}
	_, err := o.Coord.Parse()
	return err
}

// Value is what a candidate proclaims: PROPOSAL, else --id, else
// defaultValue (hostname-pid); "" for --observe and --candidates,
// which campaign for nothing.
func (o electOptions) Value() string {
	switch {
	case o.Observe || o.Candidates:
		return ""
	case o.Proposal != "":
		return o.Proposal
	case o.ID != "":
		return o.ID
	}
	return defaultValue()
}

// defaultValue is the value a candidate proclaims when given none:
// hostname-pid ("coordctl" when the host has no name).
func defaultValue() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "coordctl"
	}
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}
