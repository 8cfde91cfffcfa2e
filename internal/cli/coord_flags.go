package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/internal/sidecar"
)

// coordFlags are the coordinated-election flags elect and sidecar share:
// the policy and this candidate's attributes.
type coordFlags struct {
	Policy    string
	NoPreempt bool
	Priority  int64
	Version   string
	Labels    []string
}

func policyNames() string {
	names := make([]string, len(election.Policies))
	for i, p := range election.Policies {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}

// add registers the flags; versionHelp says what an empty --version means.
func (c *coordFlags) add(fl *pflag.FlagSet, versionHelp string) {
	fl.StringVar(&c.Policy, "policy", "first-come", "who should lead: "+policyNames())
	fl.BoolVar(&c.NoPreempt, "no-preempt", false, "a preferred candidate that joins waits for the leader to resign instead of taking over")
	fl.Int64Var(&c.Priority, "priority", 0, "this candidate's priority (higher leads under --policy priority; breaks version ties)")
	fl.StringVar(&c.Version, "version", "", "this candidate's semantic version, e.g. 1.4.0 ("+versionHelp+")")
	fl.StringArrayVar(&c.Labels, "label", nil, "a label KEY=VALUE shown by --candidates (repeatable)")
}

// given reports whether any flag asks for more than first-come with no
// attributes.
func (c *coordFlags) given() bool {
	return c.Policy != "" && c.Policy != string(election.PolicyFirstCome) || c.NoPreempt ||
		c.Priority != 0 || c.Version != "" || len(c.Labels) > 0
}

// parse checks the flags and returns the policy, NoPreempt folded in, and
// the labels as a map.
func (c *coordFlags) parse() (election.Preference, map[string]string, error) {
	p, err := election.ParsePolicy(c.Policy)
	if err != nil {
		return election.Preference{}, nil, usageErrorf("invalid --policy %q: want %s", c.Policy, policyNames())
	}
	if c.Version != "" && !election.ValidVersion(c.Version) {
		return election.Preference{}, nil, usageErrorf("invalid --version %q: want a semantic version MAJOR.MINOR.PATCH, as 1.4.0 or v2.0.0-rc.1", c.Version)
	}
	var labels map[string]string
	for _, l := range c.Labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return election.Preference{}, nil, usageErrorf("invalid --label %q: want KEY=VALUE", l)
		}
		if labels == nil {
			labels = map[string]string{}
		}
		labels[k] = v
	}
	return election.Preference{Policy: p, NoPreempt: c.NoPreempt}, labels, nil
}

// options are the election options of a campaign as id.
func (c *coordFlags) options(id string) ([]election.Option, error) {
	pref, labels, err := c.parse()
	if err != nil {
		return nil, err
	}
	return []election.Option{election.WithCoordination(pref,
		election.Attributes{ID: id, Priority: c.Priority, Version: c.Version, Labels: labels})}, nil
}

// candidatesOutput is what elect --candidates prints: one line per
// candidate, the leader first ({"event":"candidates","name":N,
// "candidates":[...]} with -w json).
type candidatesOutput struct {
	Event      string               `json:"event"` // "candidates"
	Name       string               `json:"name"`
	Candidates []election.Candidate `json:"candidates"`
}

func (o candidatesOutput) WriteSimple(w io.Writer) error {
	if len(o.Candidates) == 0 {
		_, err := fmt.Fprintf(w, "no candidates in %s\n", o.Name)
		return err
	}
	for _, c := range o.Candidates {
		if _, err := fmt.Fprintln(w, c); err != nil {
			return err
		}
	}
	return nil
}

// coordination is the sidecar's election.Coordination from the flags.
func (o *sidecarOptions) coordination() (sidecar.Coordination, error) {
	pref, labels, err := o.Coord.parse()
	if err != nil {
		return sidecar.Coordination{}, err
	}
	return sidecar.Coordination{Policy: pref.Policy, NoPreempt: pref.NoPreempt, Priority: o.Coord.Priority,
		Version: o.Coord.Version, Labels: labels}, nil
}
