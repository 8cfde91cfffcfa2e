package sweep

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
)

// Result is one finished trial, one JSON line in a results file.
type Result struct {
	Experiment string             `json:"experiment"`
	Point      Point              `json:"point"`
	Seed       int64              `json:"seed"`
	Metrics    map[string]float64 `json:"metrics,omitempty"`
	// Error says why the trial could not measure (not a measured failure,
	// which is a metric); such a trial is run again on resume.
	Error string `json:"error,omitempty"`
	// ElapsedMs is the trial's wall time, fixture setup excluded.
	ElapsedMs float64 `json:"elapsed_ms"`
}

// Trial returns the trial r is the result of.
func (r Result) Trial() Trial { return Trial{Point: r.Point, Seed: r.Seed} }

// ReadResults reads a results file. A last line cut short (the sweep was
// killed while writing it) is ignored; any other unreadable line is an error.
func ReadResults(r io.Reader) ([]Result, error) {
	var out []Result
	br := bufio.NewReader(r)
	line := 0
	for {
		b, err := br.ReadBytes('\n')
		if len(b) > 0 {
			line++
			var res Result
			if jerr := json.Unmarshal(b, &res); jerr != nil {
				if err == io.EOF { // torn last line, no newline
					return out, nil
				}
				return nil, fmt.Errorf("%w: results line %d: %v", ErrSpec, line, jerr)
			}
			out = append(out, res)
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// Pending returns the trials of spec that results do not hold a
// measurement of (an errored trial counts as not done), in spec order.
func Pending(s Spec, results []Result) []Trial {
	done := map[string]bool{}
	for _, r := range results {
		if r.Experiment == s.Experiment && r.Error == "" {
			done[r.Trial().Key()] = true
		}
	}
	var out []Trial
	for _, t := range s.Trials() {
		if !done[t.Key()] {
			out = append(out, t)
		}
	}
	return out
}

// Latest keeps, per trial of spec, the last result that measured (or, if
// none did, the last error), in spec order; results of other experiments
// or points are dropped.
func Latest(s Spec, results []Result) []Result {
	last := map[string]Result{}
	for _, r := range results {
		if r.Experiment != s.Experiment {
			continue
		}
		k := r.Trial().Key()
		if prev, ok := last[k]; ok && prev.Error == "" && r.Error != "" {
			continue
		}
		last[k] = r
	}
	var out []Result
	for _, t := range s.Trials() {
		if r, ok := last[t.Key()]; ok {
			out = append(out, r)
		}
	}
	return out
}

// WriteCSV writes results as CSV: experiment, one column per parameter,
// seed, one column per metric (both sorted by name), error, elapsed_ms.
func WriteCSV(w io.Writer, results []Result) error {
	params, metrics := map[string]bool{}, map[string]bool{}
	for _, r := range results {
		for k := range r.Point {
			params[k] = true
		}
		for k := range r.Metrics {
			metrics[k] = true
		}
	}
	pn, mn := slices.Sorted(maps.Keys(params)), slices.Sorted(maps.Keys(metrics))
	cw := csv.NewWriter(w)
	head := append([]string{"experiment"}, pn...)
	head = append(head, "seed")
	head = append(head, mn...)
	head = append(head, "error", "elapsed_ms")
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, r := range results {
		row := []string{r.Experiment}
		for _, k := range pn {
			row = append(row, r.Point[k])
		}
		row = append(row, strconv.FormatInt(r.Seed, 10))
		for _, k := range mn {
			v, ok := r.Metrics[k]
			if !ok {
				row = append(row, "")
				continue
			}
			row = append(row, strconv.FormatFloat(v, 'g', -1, 64))
		}
		row = append(row, r.Error, strconv.FormatFloat(r.ElapsedMs, 'f', 3, 64))
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
