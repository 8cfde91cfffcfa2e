package hold

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/sidecar"
)

// CoordFlags are the coordinated-election flags coordctl elect and sidecar
// share, as given: the policy and this candidate's attributes.
type CoordFlags struct {
	Policy    string
	NoPreempt bool
	Priority  int64
	Version   string
	Labels    []string
}

// AddCoordFlags registers the coordinated-election flags elect and sidecar
// share; versionHelp says what an empty --version means.
func AddCoordFlags(fl *pflag.FlagSet, c *CoordFlags, versionHelp string) {
	fl.StringVar(&c.Policy, "policy", "first-come", "who should lead: "+PolicyNames())
	fl.BoolVar(&c.NoPreempt, "no-preempt", false, "a preferred candidate that joins waits for the leader to resign instead of taking over")
	fl.Int64Var(&c.Priority, "priority", 0, "this candidate's priority (higher leads under --policy priority; breaks version ties)")
	fl.StringVar(&c.Version, "version", "", "this candidate's semantic version, e.g. 1.4.0 ("+versionHelp+")")
	fl.StringArrayVar(&c.Labels, "label", nil, "a label KEY=VALUE shown by --candidates (repeatable)")
}

// PolicyNames lists election.Policies for help and messages.
func PolicyNames() string {
	names := make([]string, len(election.Policies))
	for i, p := range election.Policies {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}

// Given reports whether any flag asks for more than first-come with no
// attributes.
func (c CoordFlags) Given() bool {
	return c.Policy != "" && c.Policy != string(election.PolicyFirstCome) || c.NoPreempt ||
		c.Priority != 0 || c.Version != "" || len(c.Labels) > 0
}

// Parse checks the flags (usage errors naming the flag) and returns them
// as the sidecar's Coordination, the labels as a map.
func (c CoordFlags) Parse() (sidecar.Coordination, error) {
	p, err := election.ParsePolicy(c.Policy)
	if err != nil {
		return sidecar.Coordination{}, cmdutil.UsageErrorf("invalid --policy %q: want %s", c.Policy, PolicyNames())
	}
	if c.Version != "" && !election.ValidVersion(c.Version) {
		return sidecar.Coordination{}, cmdutil.UsageErrorf("invalid --version %q: want a semantic version MAJOR.MINOR.PATCH, as 1.4.0 or v2.0.0-rc.1", c.Version)
	}
	var labels map[string]string
	for _, l := range c.Labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return sidecar.Coordination{}, cmdutil.UsageErrorf("invalid --label %q: want KEY=VALUE", l)
		}
		if labels == nil {
			labels = map[string]string{}
		}
		labels[k] = v
	}
	return sidecar.Coordination{Policy: p, NoPreempt: c.NoPreempt, Priority: c.Priority, Version: c.Version, Labels: labels}, nil
}

// ElectionOptions are the options of a campaign as id under the flags
// (Parse's errors); none when no flag was given (etcd's layout only).
func (c CoordFlags) ElectionOptions(id string) ([]election.Option, error) {
	if !c.Given() {
		return nil, nil
	}
	co, err := c.Parse()
	if err != nil {
		return nil, err
	}
	return []election.Option{election.WithCoordination(election.Preference{Policy: co.Policy, NoPreempt: co.NoPreempt},
		election.Attributes{ID: id, Priority: co.Priority, Version: co.Version, Labels: co.Labels})}, nil
}
