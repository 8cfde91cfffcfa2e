package scenarios

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/coordkit/coordkit/scenarios/report"
)

// Errors of Select.
var (
	// ErrNoName: neither a scenario's name nor all of them.
	ErrNoName = errors.New("scenarios: no scenario named")
	// ErrNameAndAll: a scenario's name and all of them.
	ErrNameAndAll = errors.New("scenarios: a name and all scenarios")
)

// Select returns the names to run: every scenario, in registration order,
// with all; otherwise name alone. Errors: ErrNameAndAll, ErrNoName, or an
// *UnknownError for a name not registered.
func (r *Registry) Select(name string, all bool) ([]string, error) {
	switch {
	case all && name != "":
		return nil, ErrNameAndAll
	case all:
		var names []string
		for _, s := range r.list {
			names = append(names, s.Name)
		}
		return names, nil
	case name == "":
		return nil, ErrNoName
	}
	if _, ok := r.Lookup(name); !ok {
		return nil, &UnknownError{Name: name, Known: r.Names()}
	}
	return []string{name}, nil
}

// Listing is the scenarios' names and summaries, in registration order:
// `coordctl scenario list`; as JSON an array of {"name","summary"}.
type Listing []ListItem

// ListItem is one line of a Listing.
type ListItem struct {
	Name    string `json:"name"`
	Summary string `json:"summary"`
}

// Listing returns r's Listing.
func (r *Registry) Listing() Listing {
	l := Listing{}
	for _, s := range r.list {
		l = append(l, ListItem{Name: s.Name, Summary: s.Summary})
	}
	return l
}

// WriteText writes a line per scenario, name and summary in columns.
func (l Listing) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, s := range l {
		fmt.Fprintf(tw, "%s\t%s\n", s.Name, s.Summary)
	}
	return tw.Flush()
}

// InterruptedError is RunAll's error when its context ends: a run cut
// short proves nothing either way, so no report is returned for it.
type InterruptedError struct {
	Name string // the scenario that was running or next
	Err  error  // the context's error
}

func (e *InterruptedError) Error() string { return fmt.Sprintf("scenario %s: interrupted", e.Name) }

// Unwrap returns the context's error.
func (e *InterruptedError) Unwrap() error { return e.Err }

// RunAll runs the named scenarios one after another with env and returns
// a report for each. A scenario that could not be carried out gets a
// report that says so (Error set, or Skipped for ErrSkipped) with the
// elapsed time, and the run goes on. progress receives a line as each
// starts ("scenario NAME: running (seed S, scale X)"), the scenario's own
// progress indented by two spaces, why one could not be carried out, and
// its verdict ("scenario NAME: PASS|FAIL|SKIPPED in 1.2s"). When ctx ends
// RunAll returns the reports so far and an *InterruptedError.
func (r *Registry) RunAll(ctx context.Context, names []string, env Env, progress io.Writer) ([]*report.Report, error) {
	if progress == nil {
		progress = io.Discard
	}
	scale := env.Scale
	if scale == "" {
		scale = ScaleSmall
	}
	env.Progress = Indent(progress, "  ")
	var reports []*report.Report
	for _, name := range names {
		if ctx.Err() != nil {
			return reports, &InterruptedError{Name: name, Err: ctx.Err()}
		}
		fmt.Fprintf(progress, "scenario %s: running (seed %d, scale %s)\n", name, env.Seed, scale)
		start := time.Now()
		rep, err := r.Run(ctx, name, env)
		if ctx.Err() != nil {
			return reports, &InterruptedError{Name: name, Err: ctx.Err()}
		}
		if err != nil {
			fmt.Fprintf(progress, "scenario %s: %v\n", name, err)
			rep = report.New(name, "")
			if s, ok := r.Lookup(name); ok {
				rep.Summary = s.Summary
			}
			rep.Seed, rep.Scale, rep.Error = env.Seed, string(scale), err.Error()
			if errors.Is(err, ErrSkipped) {
				rep.Error, rep.Skipped = "", err.Error()
			}
			rep.Elapsed = report.Millis(time.Since(start))
			rep.Finish()
		}
		verdict := "PASS"
		switch {
		case rep.Skipped != "":
			verdict = "SKIPPED"
		case !rep.Passed:
			verdict = "FAIL"
		}
		fmt.Fprintf(progress, "scenario %s: %s in %s\n", name, verdict, rep.Elapsed.D().Round(1e6))
		reports = append(reports, rep)
	}
	return reports, nil
}

// Indent returns a writer that prefixes each write to w with prefix.
// Scenarios write whole progress lines, so a caller that prints its own
// lines around a run indents the run's under them.
func Indent(w io.Writer, prefix string) io.Writer { return indentWriter{w: w, prefix: prefix} }

type indentWriter struct {
	w      io.Writer
	prefix string
}

func (p indentWriter) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, p.prefix+string(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}
