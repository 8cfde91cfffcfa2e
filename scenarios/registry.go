package scenarios

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/coordkit/coordkit/scenarios/report"
)

var (
	// ErrUnknownScenario is returned by Registry.Run for a name not registered.
	ErrUnknownScenario = errors.New("scenarios: unknown scenario")
	// ErrDuplicate is returned by Register for a name already registered.
	ErrDuplicate = errors.New("scenarios: duplicate scenario")
	// ErrInvalid is returned by Register for a scenario without a name, a
	// Run function, or at least two claims; and by Env.Validate.
	ErrInvalid = errors.New("scenarios: invalid")
)

// Scale chooses how big a run is: small for tests and a quick look, full
// for figures worth quoting.
type Scale string

// Scales.
const (
	ScaleSmall Scale = "small"
	ScaleFull  Scale = "full"
)

// ParseScale parses "small" or "full".
func ParseScale(s string) (Scale, error) {
	switch Scale(s) {
	case ScaleSmall, ScaleFull:
		return Scale(s), nil
	}
	return "", fmt.Errorf("%w scale %q: want small or full", ErrInvalid, s)
}

// Pick returns small when the scale is small and full otherwise.
func Pick[T any](s Scale, small, full T) T {
	if s == ScaleFull {
		return full
	}
	return small
}

// Env is what a scenario run gets from its caller.
type Env struct {
	// Progress receives human-readable progress lines; io.Discard when nil.
	Progress io.Writer
	// Seed drives every random choice of the run (fault schedules, jitter).
	Seed int64
	// Scale is ScaleSmall when empty.
	Scale Scale
	// TempDir is a directory the run may fill; it is the caller's to remove.
	// os.MkdirTemp is used when empty (and removed by Registry.Run).
	TempDir string
	// Logger receives the lab's Raft log at debug level (when enabled for
	// debug); discarded when nil.
	Logger *slog.Logger
	// EtcdEndpoints, when set, are used by scenarios that need etcd instead
	// of starting an embedded member.
	EtcdEndpoints []string
}

// Progressf writes one progress line.
func (e Env) Progressf(format string, args ...any) {
	if e.Progress == nil {
		return
	}
	fmt.Fprintf(e.Progress, format+"\n", args...)
}

func (e Env) withDefaults() Env {
	if e.Progress == nil {
		e.Progress = io.Discard
	}
	if e.Scale == "" {
		e.Scale = ScaleSmall
	}
	if e.Logger == nil {
		e.Logger = slog.New(slog.DiscardHandler)
	}
	return e
}

// Scenario is one experiment.
type Scenario struct {
	// Name is the stable identifier used on the command line.
	Name string
	// Summary is one line saying what the scenario shows.
	Summary string
	// Claims are the claims of theory the scenario tests, as the reader
	// would state them; the report has one verdict for each (or more).
	Claims []string
	// Run performs the experiment. It returns an error only when the
	// experiment could not be carried out.
	Run func(ctx context.Context, env Env) (*report.Report, error)
}

// Registry holds scenarios by name, in registration order.
type Registry struct {
	list []Scenario
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

// Register adds s. It returns an error wrapping ErrInvalid or ErrDuplicate.
func (r *Registry) Register(s Scenario) error {
	switch {
	case s.Name == "" || strings.ContainsAny(s.Name, " \t\n"):
		return fmt.Errorf("%w: name %q", ErrInvalid, s.Name)
	case s.Run == nil:
		return fmt.Errorf("%w: %s has no Run", ErrInvalid, s.Name)
	case len(s.Claims) < 2:
		return fmt.Errorf("%w: %s states %d claims, want at least 2", ErrInvalid, s.Name, len(s.Claims))
	}
	if _, ok := r.Lookup(s.Name); ok {
		return fmt.Errorf("%w: %s", ErrDuplicate, s.Name)
	}
	r.list = append(r.list, s)
	return nil
}

// MustRegister is Register that panics; for Default and tests.
func (r *Registry) MustRegister(s Scenario) {
	if err := r.Register(s); err != nil {
		panic(err)
	}
}

// Lookup returns the scenario named name.
func (r *Registry) Lookup(name string) (Scenario, bool) {
	for _, s := range r.list {
		if s.Name == name {
			return s, true
		}
	}
	return Scenario{}, false
}

// List returns the scenarios in registration order.
func (r *Registry) List() []Scenario { return append([]Scenario(nil), r.list...) }

// Names returns the names of the scenarios, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.list))
	for _, s := range r.list {
		names = append(names, s.Name)
	}
	sort.Strings(names)
	return names
}

// UnknownError is returned by Run for an unregistered name; it lists the
// names that are.
type UnknownError struct {
	Name  string
	Known []string
}

func (e *UnknownError) Error() string {
	return fmt.Sprintf("unknown scenario %q; scenarios are: %s", e.Name, strings.Join(e.Known, ", "))
}

// Unwrap returns ErrUnknownScenario.
func (e *UnknownError) Unwrap() error { return ErrUnknownScenario }

// Run runs the named scenario and completes its report: name, summary,
// seed, scale, elapsed time and verdict. It returns *UnknownError (wrapping
// ErrUnknownScenario) for an unknown name, and the scenario's own error,
// wrapped with its name, when the experiment could not be carried out.
func (r *Registry) Run(ctx context.Context, name string, env Env) (*report.Report, error) {
	s, ok := r.Lookup(name)
	if !ok {
		return nil, &UnknownError{Name: name, Known: r.Names()}
	}
	env = env.withDefaults()
	if _, err := ParseScale(string(env.Scale)); err != nil {
		return nil, err
	}
	if env.TempDir == "" {
		dir, err := os.MkdirTemp("", "coordkit-scenario-")
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", name, err)
		}
		defer os.RemoveAll(dir)
		env.TempDir = dir
	}
	start := time.Now()
	rep, err := s.Run(ctx, env)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", name, err)
	}
	if rep == nil {
		return nil, fmt.Errorf("scenario %s: %w: no report", name, ErrInvalid)
	}
	rep.Name = s.Name
	if rep.Summary == "" {
		rep.Summary = s.Summary
	}
	rep.Seed = env.Seed
	rep.Scale = string(env.Scale)
	rep.Elapsed = report.Millis(time.Since(start))
	if rep.Claims == nil {
		rep.Claims = []report.Claim{}
	}
	if rep.Metrics == nil {
		rep.Metrics = report.Metrics{}
	}
	rep.Finish()
	return rep, nil
}
