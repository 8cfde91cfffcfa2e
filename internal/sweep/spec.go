package sweep

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Errors of the package.
var (
	// ErrSpec: a spec (file or flags) that cannot be read.
	ErrSpec = errors.New("sweep: invalid spec")
	// ErrUnknownExperiment: a spec names an experiment nobody registered.
	ErrUnknownExperiment = errors.New("sweep: unknown experiment")
)

// MaxTrials bounds one sweep's grid × seeds.
const MaxTrials = 1_000_000

// Param is one swept parameter and the values it takes, in order.
type Param struct {
	Name   string   `json:"name"`
	Values []string `json:"values"`
}

// Spec is what to run: an experiment, swept parameters (their cartesian
// product is the grid, the first parameter varying slowest), parameters
// held fixed, and the seeds each point runs.
type Spec struct {
	Experiment string            `json:"experiment"`
	Params     []Param           `json:"params"`
	Fixed      map[string]string `json:"fixed,omitempty"`
	Seeds      []int64           `json:"seeds"`
}

// Point is one combination of parameter values (swept and fixed).
type Point map[string]string

// Key is the point in a canonical form, names sorted: "a=1 b=x".
func (p Point) Key() string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(p)) {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k + "=" + p[k])
	}
	return b.String()
}

// Label names the point by the swept parameters only, in spec order:
// "timeout=12ms prevote=off"; "all" for a grid without swept parameters.
func (s Spec) Label(p Point) string {
	var parts []string
	for _, pr := range s.Params {
		parts = append(parts, pr.Name+"="+p[pr.Name])
	}
	if len(parts) == 0 {
		return "all"
	}
	return strings.Join(parts, " ")
}

// Trial is one run: a point and a seed.
type Trial struct {
	Point Point
	Seed  int64
}

// Key identifies the trial in a results file.
func (t Trial) Key() string { return t.Point.Key() + " #" + strconv.FormatInt(t.Seed, 10) }

// Validate reports the first problem with s, or nil.
func (s Spec) Validate() error {
	if s.Experiment == "" {
		return fmt.Errorf("%w: no experiment", ErrSpec)
	}
	if len(s.Seeds) == 0 {
		return fmt.Errorf("%w: no seeds", ErrSpec)
	}
	seen := map[string]bool{}
	n := len(s.Seeds)
	for _, p := range s.Params {
		if err := checkName(p.Name); err != nil {
			return err
		}
		if seen[p.Name] {
			return fmt.Errorf("%w: parameter %q given twice", ErrSpec, p.Name)
		}
		seen[p.Name] = true
		if len(p.Values) == 0 {
			return fmt.Errorf("%w: parameter %q has no values", ErrSpec, p.Name)
		}
		vs := map[string]bool{}
		for _, v := range p.Values {
			if v == "" || vs[v] {
				return fmt.Errorf("%w: parameter %q: empty or repeated value %q", ErrSpec, p.Name, v)
			}
			vs[v] = true
		}
		n *= len(p.Values)
		if n > MaxTrials {
			return fmt.Errorf("%w: more than %d trials", ErrSpec, MaxTrials)
		}
	}
	for k := range s.Fixed {
		if err := checkName(k); err != nil {
			return err
		}
		if seen[k] {
			return fmt.Errorf("%w: parameter %q both swept and fixed", ErrSpec, k)
		}
	}
	ss := map[int64]bool{}
	for _, sd := range s.Seeds {
		if ss[sd] {
			return fmt.Errorf("%w: seed %d given twice", ErrSpec, sd)
		}
		ss[sd] = true
	}
	return nil
}

func checkName(n string) error {
	if n == "" || strings.ContainsAny(n, " =,#\t") {
		return fmt.Errorf("%w: parameter name %q (letters, digits, - and _)", ErrSpec, n)
	}
	return nil
}

// Grid returns every point, the first parameter varying slowest.
func (s Spec) Grid() []Point {
	pts := []Point{{}}
	for _, p := range s.Params {
		var next []Point
		for _, base := range pts {
			for _, v := range p.Values {
				q := maps.Clone(base)
				q[p.Name] = v
				next = append(next, q)
			}
		}
		pts = next
	}
	for _, q := range pts {
		maps.Copy(q, s.Fixed)
	}
	return pts
}

// Trials returns every trial, point by point, seeds in order within a
// point (so one fixture per point serves its seeds).
func (s Spec) Trials() []Trial {
	var out []Trial
	for _, p := range s.Grid() {
		for _, sd := range s.Seeds {
			out = append(out, Trial{Point: p, Seed: sd})
		}
	}
	return out
}

// ParseSeeds reads "A..B" (inclusive) or a comma list "1,5,9".
func ParseSeeds(s string) ([]int64, error) {
	if lo, hi, ok := strings.Cut(s, ".."); ok {
		a, err1 := strconv.ParseInt(strings.TrimSpace(lo), 10, 64)
		b, err2 := strconv.ParseInt(strings.TrimSpace(hi), 10, 64)
		if err1 != nil || err2 != nil || b < a {
			return nil, fmt.Errorf("%w: seeds %q: want A..B with A <= B", ErrSpec, s)
		}
		if b-a >= MaxTrials {
			return nil, fmt.Errorf("%w: seeds %q: more than %d", ErrSpec, s, MaxTrials)
		}
		out := make([]int64, 0, b-a+1)
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
		return out, nil
	}
	var out []int64
	for f := range strings.SplitSeq(s, ",") {
		v, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: seeds %q: want A..B or a list 1,2,3", ErrSpec, s)
		}
		out = append(out, v)
	}
	return out, nil
}

// ParseParam reads "name=v1,v2,v3".
func ParseParam(s string) (Param, error) {
	name, vals, ok := strings.Cut(s, "=")
	if !ok || vals == "" {
		return Param{}, fmt.Errorf("%w: parameter %q: want name=v1,v2", ErrSpec, s)
	}
	p := Param{Name: strings.TrimSpace(name)}
	for v := range strings.SplitSeq(vals, ",") {
		p.Values = append(p.Values, strings.TrimSpace(v))
	}
	return p, nil
}

// Flags is a spec given as command-line values, in ParseSpec's words:
// Params "name=v1,v2" (ParseParam), Sets "name=value", Seeds as
// ParseSeeds reads them ("" is 1..10).
type Flags struct {
	Experiment string
	Params     []string
	Sets       []string
	Seeds      string
}

// FlagError is a value of Flags that cannot be read: Flag names the field
// as its flag (param, set, seeds), Value is the value given.
type FlagError struct {
	Flag, Value string
	Err         error
}

// Error quotes the value of set; param's and seeds' Err already does.
func (e *FlagError) Error() string {
	if e.Flag == "set" {
		return fmt.Sprintf("%s %q: %v", e.Flag, e.Value, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Flag, e.Err)
}

func (e *FlagError) Unwrap() error { return e.Err }

// Spec builds and validates the spec. Errors: a *FlagError for a value
// that cannot be read, then Spec.Validate's.
func (fl Flags) Spec() (Spec, error) {
	s := Spec{Experiment: fl.Experiment, Fixed: map[string]string{}}
	for _, raw := range fl.Params {
		p, err := ParseParam(raw)
		if err != nil {
			return s, &FlagError{Flag: "param", Value: raw, Err: err}
		}
		s.Params = append(s.Params, p)
	}
	for _, kv := range fl.Sets {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || v == "" {
			return s, &FlagError{Flag: "set", Value: kv, Err: errors.New("want name=value")}
		}
		s.Fixed[k] = v
	}
	seeds := fl.Seeds
	if seeds == "" {
		seeds = "1..10"
	}
	sd, err := ParseSeeds(seeds)
	if err != nil {
		return s, &FlagError{Flag: "seeds", Value: seeds, Err: err}
	}
	s.Seeds = sd
	return s, s.Validate()
}

// ParseSpec reads a spec file: one directive a line, '#' starts a comment.
//
//	experiment election
//	param timeout 12ms,25ms,50ms
//	param prevote on,off
//	set delay 7.5ms
//	seeds 1..1000
func ParseSpec(r io.Reader) (Spec, error) {
	s := Spec{Fixed: map[string]string{}}
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		text, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		bad := func(want string) error {
			return fmt.Errorf("%w: line %d: %q: want %s", ErrSpec, line, strings.TrimSpace(text), want)
		}
		switch f[0] {
		case "experiment":
			if len(f) != 2 {
				return Spec{}, bad("experiment NAME")
			}
			s.Experiment = f[1]
		case "param":
			if len(f) != 3 {
				return Spec{}, bad("param NAME v1,v2,...")
			}
			p, err := ParseParam(f[1] + "=" + f[2])
			if err != nil {
				return Spec{}, fmt.Errorf("line %d: %w", line, err)
			}
			s.Params = append(s.Params, p)
		case "set":
			if len(f) != 3 {
				return Spec{}, bad("set NAME VALUE")
			}
			s.Fixed[f[1]] = f[2]
		case "seeds":
			if len(f) != 2 {
				return Spec{}, bad("seeds A..B")
			}
			sd, err := ParseSeeds(f[1])
			if err != nil {
				return Spec{}, fmt.Errorf("line %d: %w", line, err)
			}
			s.Seeds = sd
		default:
			return Spec{}, bad("experiment, param, set or seeds")
		}
	}
	if err := sc.Err(); err != nil {
		return Spec{}, err
	}
	return s, s.Validate()
}
