package scalebench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/coordkit/coordkit/internal/bench"
)

// What `coordctl bench scale` needs beyond Run: its command line's choices
// applied to Options (Selection), saved results read back (ReadResults),
// the charts written to a file (WriteSVGFile) and the text form (Printed).

// Curves are the curves a run can measure.
func Curves() []string {
	return []string{CurveCosts, CurveQueue, CurveLocks, CurveCandidates, CurveSessions}
}

// Selection is what a command line chooses on top of Options: Quick
// (QuickOptions' points for each option not given explicitly), the curves
// to run (a curve left out gets no points), and the shapes as text.
type Selection struct {
	Quick  bool
	Curves []string
	Shapes []string
	// Given reports whether the option of that flag name was given
	// explicitly (waiters, locks, shapes, handoffs, duration, crashes,
	// idle-sessions, idle-duration): it wins over Quick. Nil: none was.
	Given func(flag string) bool
}

// optionError is a bad choice worded for the user as is; it matches ErrOptions.
type optionError struct{ msg string }

func (e *optionError) Error() string        { return e.msg }
func (e *optionError) Is(target error) bool { return target == ErrOptions }

// Apply returns o as s chooses. It returns ErrOptions for an unknown curve
// or a shape ParseShape cannot read; the rest is Run's to validate.
func (s Selection) Apply(o Options) (Options, error) {
	given := s.Given
	if given == nil {
		given = func(string) bool { return false }
	}
	shapes := s.Shapes
	if s.Quick {
		q := QuickOptions()
		for name, set := range map[string]func(){
			"waiters":       func() { o.Waiters = q.Waiters },
			"locks":         func() { o.Locks = q.Locks },
			"shapes":        func() { shapes = ShapeStrings(q.Shapes) },
			"handoffs":      func() { o.Handoffs = q.Handoffs },
			"duration":      func() { o.Duration = q.Duration },
			"crashes":       func() { o.Crashes = q.Crashes },
			"idle-sessions": func() { o.IdleSessions = q.IdleSessions },
			"idle-duration": func() { o.IdleDuration = q.IdleDuration },
		} {
			if !given(name) {
				set()
			}
		}
	}
	on := map[string]bool{}
	for _, c := range s.Curves {
		if !slices.Contains(Curves(), c) {
			return o, &optionError{fmt.Sprintf("--curves: unknown curve %q: want some of %v", c, Curves())}
		}
		on[c] = true
	}
	if !on[CurveQueue] {
		o.Waiters = nil
	}
	if !on[CurveLocks] {
		o.Locks = nil
	}
	if !on[CurveCandidates] {
		shapes = nil
	}
	if !on[CurveSessions] {
		o.IdleSessions = nil
	}
	o.NoCosts = !on[CurveCosts]
	o.Shapes = nil
	for _, str := range shapes {
		sh, err := ParseShape(str)
		if err != nil {
			return o, err
		}
		o.Shapes = append(o.Shapes, sh)
	}
	return o, nil
}

// ReadResults reads saved -w json results and merges them in order
// (Result.Merge). A file that is not a scale result is an error naming it.
func ReadResults(paths []string) (Result, error) {
	var res Result
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			return Result{}, err
		}
		var one Result
		if err := json.Unmarshal(b, &one); err != nil || one.Benchmark != "scale" {
			return Result{}, fmt.Errorf("%s is not the -w json output of coordctl bench scale (%v)", path, err)
		}
		res = res.Merge(one)
	}
	return res, nil
}

// WriteSVGFile writes r's charts (WriteSVG) to the file at path; nothing is
// written when there is nothing to draw (ErrNoCurve, wrapped as "svg: …").
func WriteSVGFile(path string, r Result) error {
	var b bytes.Buffer
	if err := WriteSVG(&b, r); err != nil {
		return fmt.Errorf("svg: %w", err)
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// Printed is r as a bench command prints it: its own JSON; as text one
// table per curve, then its notes.
func (r Result) Printed() bench.Printed {
	return bench.Printed{Result: r, Tables: r.Tables(), Notes: r.Notes}
}
