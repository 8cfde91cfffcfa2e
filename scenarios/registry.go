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

	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/scenarios/report"
)

var (
	// ErrUnknownScenario is returned by Registry.Run for a name not registered.
	ErrUnknownScenario = errors.New("scenarios: unknown scenario")
	// ErrDuplicate is returned by Register for a name already registered.
	ErrDuplicate = errors.New("scenarios: duplicate scenario")
	// ErrInvalid is returned by Register for a scenario without a name, a
	// Run function, or at least two well-formed claims; and by Env.Validate.
	ErrInvalid = errors.New("scenarios: invalid")
	// ErrSQLNeedsDriver: an Env with SQLDSN and no SQLDriver (in a
	// *SQLError).
	ErrSQLNeedsDriver = errors.New("a SQL DSN without a driver")
	// ErrSQLNeedsDSN: an Env whose SQLDriver is not SQLite, without SQLDSN
	// (in a *SQLError).
	ErrSQLNeedsDSN = errors.New("needs a DSN")
	// ErrNoEtcd is returned (wrapped) by a run of a scenario that needs etcd
	// when Env has neither EtcdEndpoints nor StartEtcd.
	ErrNoEtcd = errors.New("scenarios: no etcd")
	// ErrSkipped is returned (wrapped) by a run of a scenario that needs a
	// server the Env does not name (advisory-lock without PostgreSQL): not
	// a failure; the error says what to give.
	ErrSkipped = errors.New("scenarios: skipped")
	// ErrClaims is wrapped by *ClaimsError, returned by Registry.Run when a
	// run did not check exactly the claims its scenario declares.
	ErrClaims = errors.New("scenarios: claims checked differ from those declared")
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
	// of starting one.
	EtcdEndpoints []string
	// StartEtcd starts an etcd for a scenario that needs one when
	// EtcdEndpoints is empty. When both are empty such a scenario fails
	// with ErrNoEtcd; the lab scenarios need neither.
	StartEtcd EtcdStarter
	// LockTTL is the lease TTL of the lock holders in lock-without-fencing:
	// 2s (etcd's minimum with default timing) when zero. etcd grants whole
	// seconds.
	LockTTL time.Duration
	// SQLDriver and SQLDSN choose the database of fenced-sql: SQLDriver is
	// "sqlite" (the default when empty), "postgres" or "mysql" (any name
	// sqlfence.ParseDialect takes), SQLDSN the driver's data source name.
	// Empty SQLDSN with SQLite: a file in TempDir. A SQLite DSN (a path or
	// a file: URI) goes through sqlfence.NormalizeDSN, which makes
	// transactions IMMEDIATE and refuses deferred or in-memory ones. The
	// run creates two tables with random names there and drops them at the
	// end.
	SQLDriver string
	SQLDSN    string
	// Redis, a Redis server's host:port, makes lock-without-fencing play
	// its Redis round with a real Redis lock (redsync over go-redis) on that
	// server, under a random key prefix deleted at the end. When empty the
	// round uses a model of one (a claim on an etcd lease), so that the
	// scenario runs anywhere. Other scenarios ignore it.
	Redis string
}

// Validate checks the fields a run depends on: Scale must be empty, small
// or full; LockTTL zero or whole seconds of at least 2s; SQLDriver and
// SQLDSN a database fenced-sql can open (a *SQLError). Its error wraps
// ErrInvalid. Registry.Run calls it.
func (e Env) Validate() error {
	if e.LockTTL != 0 && (e.LockTTL < 2*time.Second || e.LockTTL%time.Second != 0) {
		return fmt.Errorf("%w lock TTL %s: want whole seconds, at least 2s", ErrInvalid, e.LockTTL)
	}
	d, err := e.sqlDialect()
	if err != nil {
		return err
	}
	if e.SQLDSN != "" {
		if _, err := sqlfence.NormalizeDSN(d, e.SQLDSN); err != nil {
			return &SQLError{Field: "DSN", Dialect: d, Err: err}
		}
	}
	if e.Scale == "" {
		return nil
	}
	_, err = ParseScale(string(e.Scale))
	return err
}

// SQLError is an Env's SQL database that cannot be used: Field is "driver"
// or "DSN", Dialect the driver's dialect once it parsed, and Err why:
// sqlfence's error (ErrUnknownDialect, ErrInvalidDSN, ErrUnsafeDSN),
// ErrSQLNeedsDriver or ErrSQLNeedsDSN. It matches ErrInvalid and Err.
type SQLError struct {
	Field   string
	Dialect sqlfence.Dialect
	Err     error
}

func (e *SQLError) Error() string   { return fmt.Sprintf("%v SQL %s: %v", ErrInvalid, e.Field, e.Err) }
func (e *SQLError) Unwrap() []error { return []error{ErrInvalid, e.Err} }

// sqlDialect is the dialect of SQLDriver, SQLite when empty. Its errors
// are *SQLError.
func (e Env) sqlDialect() (sqlfence.Dialect, error) {
	if e.SQLDriver == "" {
		if e.SQLDSN != "" {
			return 0, &SQLError{Field: "DSN", Err: ErrSQLNeedsDriver}
		}
		return sqlfence.SQLite, nil
	}
	d, err := sqlfence.ParseDialect(e.SQLDriver)
	if err != nil {
		return 0, &SQLError{Field: "driver", Err: err}
	}
	if d != sqlfence.SQLite && e.SQLDSN == "" {
		return 0, &SQLError{Field: "driver", Dialect: d, Err: ErrSQLNeedsDSN}
	}
	return d, nil
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
	// Claims are the claims of theory the scenario tests, each declared
	// once with its ID, kind and text; the run checks them by ID and the
	// report has one verdict for each (or more).
	Claims []Claim
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

// Register adds s. It returns an error wrapping ErrInvalid (no name, no
// Run, fewer than two claims, a claim without ID, kind or text, an ID
// declared twice) or ErrDuplicate.
func (r *Registry) Register(s Scenario) error {
	switch {
	case s.Name == "" || strings.ContainsAny(s.Name, " \t\n"):
		return fmt.Errorf("%w: name %q", ErrInvalid, s.Name)
	case s.Run == nil:
		return fmt.Errorf("%w: %s has no Run", ErrInvalid, s.Name)
	}
	if err := validateClaims(s); err != nil {
		return err
	}
	if _, ok := r.Lookup(s.Name); ok {
		return fmt.Errorf("%w: %s", ErrDuplicate, s.Name)
	}
	r.list = append(r.list, s)
	return nil
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
// ErrUnknownScenario) for an unknown name, an error wrapping ErrInvalid for
// an Env that fails Validate, *ClaimsError (wrapping ErrClaims) when the run
// did not check exactly the declared claims, and the scenario's own error,
// wrapped with its name, when the experiment could not be carried out.
//
// Each verdict gets the text and kind of its declared claim. The report
// passes when every claim holds, timing claims included; SafetyFailed
// picks out the safety claims that do not.
func (r *Registry) Run(ctx context.Context, name string, env Env) (*report.Report, error) {
	s, ok := r.Lookup(name)
	if !ok {
		return nil, &UnknownError{Name: name, Known: r.Names()}
	}
	if err := env.Validate(); err != nil {
		return nil, err
	}
	env = env.withDefaults()
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
	if err := judgeClaims(s, rep); err != nil {
		return nil, err
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
