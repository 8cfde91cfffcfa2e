package report

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/coordkit/coordkit/chart"
)

// laneWidth is the number of columns of the text timeline.
const laneWidth = 60

// WriteText writes the human-readable rendering of r: verdict, claims,
// metrics, tables, a character picture of the timeline, chart data and
// notes. The output depends only on r.
func WriteText(w io.Writer, r *Report) error {
	var buf bytes.Buffer
	writeText(&buf, r)
	// tabwriter pads the last column; trailing blanks are noise in diffs.
	lines := strings.Split(buf.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	_, err := io.WriteString(w, strings.Join(lines, "\n"))
	return err
}

func writeText(bw *bytes.Buffer, r *Report) {
	verdict := "PASS"
	switch {
	case r.Skipped != "":
		verdict = "SKIPPED"
	case !r.Passed:
		verdict = "FAIL"
	}
	fmt.Fprintf(bw, "%s  %s\n", verdict, r.Name)
	if r.Summary != "" {
		fmt.Fprintf(bw, "  %s\n", r.Summary)
	}
	meta := []string{"seed " + strconv.FormatInt(r.Seed, 10)}
	if r.Scale != "" {
		meta = append(meta, "scale "+r.Scale)
	}
	meta = append(meta, "took "+fmtDuration(r.Elapsed.D()))
	fmt.Fprintf(bw, "  %s\n", strings.Join(meta, ", "))
	if r.Error != "" {
		fmt.Fprintf(bw, "\nError: the experiment could not be carried out: %s\n", r.Error)
	}
	if r.Skipped != "" {
		fmt.Fprintf(bw, "\nSkipped: %s\n", r.Skipped)
	}

	fmt.Fprintf(bw, "\nClaims\n")
	for _, c := range r.Claims {
		mark := "✓"
		if !c.Holds {
			mark = "✗"
		}
		fmt.Fprintf(bw, "  %s %s%s\n", mark, c.Claim, kindNote(c))
		fmt.Fprintf(bw, "      expected: %s\n", c.Expected)
		fmt.Fprintf(bw, "      observed: %s\n", c.Observed)
	}

	if len(r.Metrics) > 0 {
		fmt.Fprintf(bw, "\nMetrics\n")
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		for _, m := range r.Metrics {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", m.Name, chart.FormatValue(m.Value), m.Unit)
		}
		_ = tw.Flush()
	}

	for _, t := range r.Tables {
		fmt.Fprintf(bw, "\n%s\n", t.Title)
		writeTable(bw, t.Columns, t.Rows)
	}

	if r.Timeline != nil {
		writeTimelineText(bw, r.Timeline)
	}

	for _, c := range r.Charts {
		writeChartText(bw, c)
	}

	if len(r.Notes) > 0 {
		fmt.Fprintf(bw, "\nNotes\n")
		for _, n := range r.Notes {
			fmt.Fprintf(bw, "  - %s\n", n)
		}
	}
}

// WriteTextAll writes several reports separated by a blank line and
// followed by a one-line tally.
func WriteTextAll(w io.Writer, rs []*Report) error {
	passed := 0
	for i, r := range rs {
		if i > 0 {
			if _, err := io.WriteString(w, "\n"+strings.Repeat("─", 72)+"\n\n"); err != nil {
				return err
			}
		}
		if err := WriteText(w, r); err != nil {
			return err
		}
		if r.Passed {
			passed++
		}
	}
	_, err := fmt.Fprintf(w, "\n%d of %d scenarios passed\n", passed, len(rs))
	return err
}

func writeTable(w io.Writer, cols []string, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if len(cols) > 0 {
		fmt.Fprintf(tw, "  %s\n", strings.Join(cols, "\t"))
	}
	for _, row := range rows {
		fmt.Fprintf(tw, "  %s\n", strings.Join(row, "\t"))
	}
	_ = tw.Flush()
}

// stateRunes are the characters of known lane states in the text timeline;
// other states use '?'.
var stateRunes = map[string]byte{
	StateLeader:    'L',
	StateFollower:  '-',
	StateCandidate: 'c',
	StateDown:      'x',
	StatePaused:    'z',
	StateHolder:    'H',
	StateWaiting:   'w',
	StateIdle:      '.',
	StateActive:    'A',
}

func stateRune(state string) byte {
	if r, ok := stateRunes[state]; ok {
		return r
	}
	return '?'
}

// statePriority ranks states for the text timeline: higher wins a column.
func statePriority(state string) int {
	switch state {
	case StateLeader, StateHolder, StateActive:
		return 8
	case StateCandidate:
		return 7
	case StateDown:
		return 6
	case StatePaused:
		return 5
	case StateWaiting:
		return 4
	case StateFollower:
		return 3
	case StateIdle:
		return 2
	}
	return 1
}

// usedStates lists the states that appear in tl, in order of first use.
func usedStates(tl *Timeline) []string {
	var out []string
	seen := map[string]bool{}
	for _, l := range tl.Lanes {
		for _, s := range l.Spans {
			if !seen[s.State] {
				seen[s.State] = true
				out = append(out, s.State)
			}
		}
	}
	return out
}

func writeTimelineText(w io.Writer, tl *Timeline) {
	end := tl.End.D()
	var key []string
	for _, st := range usedStates(tl) {
		key = append(key, fmt.Sprintf("%c %s", stateRune(st), st))
	}
	if len(tl.Faults) > 0 {
		key = append(key, "# fault")
	}
	fmt.Fprintf(w, "\nTimeline (0 to %s", tl.At(tl.End))
	if len(key) > 0 {
		fmt.Fprintf(w, "; %s", strings.Join(key, ", "))
	}
	fmt.Fprintf(w, ")\n")
	if end <= 0 {
		end = 1
	}
	col := func(t Millis) int {
		c := int(int64(t.D()) * laneWidth / int64(end))
		return min(max(c, 0), laneWidth-1)
	}
	nameW := 6
	for _, l := range tl.Lanes {
		nameW = max(nameW, len(l.Name))
	}
	for _, l := range tl.Lanes {
		// A column shows the most telling state that touches it, so that a
		// short leadership is not painted over by what follows.
		row := []byte(strings.Repeat(" ", laneWidth))
		rank := make([]int, laneWidth)
		for _, s := range l.Spans {
			if s.To <= s.From {
				continue
			}
			last := col(s.To)
			if raw := int64(s.To.D()) * laneWidth; last > col(s.From) && raw/int64(end) < laneWidth && raw%int64(end) == 0 {
				last-- // the span ends exactly where the column begins
			}
			for c := col(s.From); c <= last; c++ {
				if p := statePriority(s.State); row[c] == ' ' || p > rank[c] {
					row[c], rank[c] = stateRune(s.State), p
				}
			}
		}
		for _, m := range tl.Marks {
			if c := col(m.At); m.Lane == l.Name && row[c] == ' ' {
				row[c] = '*'
			}
		}
		fmt.Fprintf(w, "  %-*s |%s|\n", nameW, l.Name, row)
	}
	if len(tl.Faults) > 0 {
		row := []byte(strings.Repeat(" ", laneWidth))
		for _, f := range tl.Faults {
			for c := col(f.From); c <= col(f.To); c++ {
				row[c] = '#'
			}
		}
		fmt.Fprintf(w, "  %-*s |%s|\n", nameW, "faults", row)
		for _, f := range tl.Faults {
			fmt.Fprintf(w, "    %s to %s: %s\n", tl.At(f.From), tl.At(f.To), f.Label)
		}
	}
	if len(tl.Marks) > 0 {
		fmt.Fprintf(w, "  Events\n")
		for _, m := range tl.Marks {
			lane := ""
			if m.Lane != "" {
				lane = m.Lane + ": "
			}
			fmt.Fprintf(w, "    %8s  %s%s\n", tl.At(m.At), lane, m.Label)
		}
	}
	if len(tl.Ops) > 0 {
		counts := map[string]int{}
		for _, o := range tl.Ops {
			counts[o.Outcome]++
		}
		fmt.Fprintf(w, "  Operations: %d (%d ok, %d failed, %d unknown)\n", len(tl.Ops), counts[OutcomeOK], counts[OutcomeFail], counts[OutcomeUnknown])
		const maxOps = 24
		shown := 0
		cw := 8
		for _, o := range tl.Ops {
			cw = max(cw, len([]rune(o.Client)))
		}
		for _, o := range tl.Ops {
			if len(tl.Ops) > maxOps && o.Outcome == OutcomeOK {
				continue
			}
			if shown == maxOps {
				fmt.Fprintf(w, "    ...\n")
				break
			}
			shown++
			fmt.Fprintf(w, "    %8s %8s  %-*s %-7s %s\n", tl.At(o.Call), tl.At(o.Return), cw, o.Client, o.Outcome, o.Desc)
		}
	}
}

func writeChartText(w io.Writer, c chart.Chart) {
	fmt.Fprintf(w, "\nChart: %s\n", c.Title)
	if c.YLabel != "" {
		fmt.Fprintf(w, "  (y: %s)\n", c.YLabel)
	}
	if len(c.Categories) > 0 {
		cols := append([]string{""}, c.Categories...)
		var rows [][]string
		for _, s := range c.Series {
			row := []string{s.Name}
			for j := range c.Categories {
				v := "-"
				for _, p := range s.Points {
					if int(p.X) == j {
						v = chart.FormatValue(p.Y)
					}
				}
				row = append(row, v)
			}
			rows = append(rows, row)
		}
		writeTable(w, cols, rows)
		return
	}
	// One row per x, one column per series.
	xs := []float64{}
	seen := map[float64]bool{}
	for _, s := range c.Series {
		for _, p := range s.Points {
			if !seen[p.X] {
				seen[p.X] = true
				xs = append(xs, p.X)
			}
		}
	}
	sortFloats(xs)
	xl := c.XLabel
	if xl == "" {
		xl = "x"
	}
	cols := []string{xl}
	for _, s := range c.Series {
		name := s.Name
		if s.Dashed && !strings.Contains(name, "model") {
			name += " (model)"
		}
		cols = append(cols, name)
	}
	var rows [][]string
	for _, x := range xs {
		row := []string{chart.FormatValue(x)}
		for _, s := range c.Series {
			v := "-"
			for _, p := range s.Points {
				if p.X == x {
					v = chart.FormatValue(p.Y)
				}
			}
			row = append(row, v)
		}
		rows = append(rows, row)
	}
	writeTable(w, cols, rows)
}

func sortFloats(xs []float64) {
	for i := 1; i < len(xs); i++ {
		for j := i; j > 0 && xs[j] < xs[j-1]; j-- {
			xs[j], xs[j-1] = xs[j-1], xs[j]
		}
	}
}

func fmtDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(100 * time.Microsecond).String()
	default:
		return d.Round(10 * time.Millisecond).String()
	}
}

// kindNote marks a timing claim, which a loaded machine can miss (the tests
// do not require it); safety claims and claims without a kind get nothing.
func kindNote(c Claim) string {
	if c.Kind == "timing" {
		return " (timing)"
	}
	return ""
}
