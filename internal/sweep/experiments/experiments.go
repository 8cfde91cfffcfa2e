package experiments

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/coordkit/coordkit/internal/safety"
	"github.com/coordkit/coordkit/internal/sweep"
)

// Errors of the package.
var (
	// ErrUnknownParam: a spec sets or sweeps a parameter its experiment
	// does not read (wrapped by *ParamError).
	ErrUnknownParam = errors.New("experiments: unknown parameter")
	// ErrParallel: a SweepConfig with Parallel below 1.
	ErrParallel = errors.New("experiments: parallel must be at least 1")
	// ErrInterrupted: the context ended before every pending trial ran; the
	// trials that finished are in the results file (wrapped by
	// *InterruptedError).
	ErrInterrupted = errors.New("experiments: interrupted")
	// ErrNoResults: a config with ReportOnly and no Results file to report.
	ErrNoResults = errors.New("experiments: report-only needs a results file")
	// ErrCurveNeedsSVG: a SweepConfig with a Curve and no SVG to draw it in.
	ErrCurveNeedsSVG = errors.New("experiments: a curve needs an SVG file")
)

// Experiment is one experiment the sweep can run.
type Experiment struct {
	Name string
	// Params are the parameters it reads; any other is an error.
	Params []string
	// Metric is the metric summarised by default, Unit its unit.
	Metric, Unit string

	open func() (sweep.Experiment, error)
	// check, if set, reads a point as open would: a bad value is an error
	// before anything runs, not an error in every trial.
	check func(p sweep.Point) error
}

// table is the one table of experiments: lab sweep and lab figure16 read it.
func table() map[string]Experiment {
	return map[string]Experiment{
		"lock-safety":     checkExperiment("lock-safety", safety.TargetLock),
		"election-safety": checkExperiment("election-safety", safety.TargetElection),
		"election":        electionExperiment(),
		"scenario":        scenarioExperiment(),
	}
}

// UnknownError is Lookup's error for a name not in the table.
type UnknownError struct {
	Name  string
	Known []string
}

func (e *UnknownError) Error() string {
	return fmt.Sprintf("unknown experiment %q: want %s", e.Name, strings.Join(e.Known, " or "))
}

// Unwrap returns sweep.ErrUnknownExperiment.
func (e *UnknownError) Unwrap() error { return sweep.ErrUnknownExperiment }

// Lookup returns the experiment named name, or an *UnknownError.
func Lookup(name string) (Experiment, error) {
	e, ok := table()[name]
	if !ok {
		return Experiment{}, &UnknownError{Name: name, Known: Names()}
	}
	return e, nil
}

// Names returns the experiments' names, sorted.
func Names() []string {
	var out []string
	for k := range table() {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// ParamError is a parameter an experiment does not read.
type ParamError struct {
	Experiment, Param string
	Known             []string
}

func (e *ParamError) Error() string {
	return fmt.Sprintf("experiment %s has no parameter %q (it has %s)", e.Experiment, e.Param, strings.Join(e.Known, ", "))
}

// Unwrap returns ErrUnknownParam.
func (e *ParamError) Unwrap() error { return ErrUnknownParam }

// CheckParams returns a *ParamError for the first parameter of spec (swept,
// then fixed) that e does not read.
func (e Experiment) CheckParams(spec sweep.Spec) error {
	for _, p := range spec.Params {
		if !slices.Contains(e.Params, p.Name) {
			return &ParamError{Experiment: spec.Experiment, Param: p.Name, Known: e.Params}
		}
	}
	for k := range spec.Fixed {
		if !slices.Contains(e.Params, k) {
			return &ParamError{Experiment: spec.Experiment, Param: k, Known: e.Params}
		}
	}
	return nil
}

// CheckPoints reads every point of spec's grid as a trial would and returns
// the first error, prefixed with the point's label.
func (e Experiment) CheckPoints(spec sweep.Spec) error {
	if e.check == nil {
		return nil
	}
	for _, p := range spec.Grid() {
		if err := e.check(p); err != nil {
			return fmt.Errorf("%s: %w", spec.Label(p), err)
		}
	}
	return nil
}

// Open returns the sweep engine's experiment.
func (e Experiment) Open() (sweep.Experiment, error) { return e.open() }

// onOff reads a sweep's on/off parameter value.
func onOff(v string) (bool, error) {
	switch v {
	case "on", "true":
		return true, nil
	case "off", "false":
		return false, nil
	}
	return false, errors.New("want on or off")
}
