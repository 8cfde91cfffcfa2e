package bench

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// Errors of WriteTable.
var (
	// ErrShape: a row's values do not match the table's columns, or a
	// ratio names a column the table does not have.
	ErrShape = errors.New("bench: table shape")
)

// Table is what every bench command prints: one row per metric, one value
// column per implementation measured side by side in the run, the unit, and
// one column per Ratio. A benchmark that compares more implementations adds
// columns (and ratios against them); one that measures more adds rows.
type Table struct {
	// Title is an optional line printed above the table: what ran, on what.
	Title string
	// Columns name the implementations, in print order, as the -w json
	// rows name them (e.g. "coordkit", "etcd_concurrency").
	Columns []string
	Rows    []Row
	// Ratios are printed after the unit, in order.
	Ratios []Ratio
}

// Row is one metric: a value per column of its table, in the table's
// column order. A NaN value (or a missing one at the end) is an
// implementation this metric was not measured for; it prints as "-".
type Row struct {
	Metric string
	Values []float64
	Unit   string
}

// Ratio is a column comparing two value columns, row by row.
type Ratio struct {
	Of, To string // column names
	// Plain prints Of/To as it is. Otherwise the ratio is how many times
	// better Of did than To: To/Of for a cost (a latency), Of/To for a rate
	// (see HigherIsBetter), so above 1 always means Of did better.
	Plain bool
}

// Add appends a row with one value per column, in column order.
func (t *Table) Add(metric, unit string, values ...float64) {
	t.Rows = append(t.Rows, Row{Metric: metric, Values: values, Unit: unit})
}

// Value is the value of column in the row named metric; ok is false when
// there is no such row or column or the value was not measured.
func (t Table) Value(metric, column string) (v float64, ok bool) {
	c := slices.Index(t.Columns, column)
	i := slices.IndexFunc(t.Rows, func(r Row) bool { return r.Metric == metric })
	if c < 0 || i < 0 {
		return 0, false
	}
	v = t.Rows[i].value(c)
	return v, !math.IsNaN(v)
}

func (r Row) value(c int) float64 {
	if c >= len(r.Values) {
		return math.NaN()
	}
	return r.Values[c]
}

// HigherIsBetter reports whether unit is a rate ("per_s", "writes/s"):
// more is better. Every other unit is a cost, where less is better.
func HigherIsBetter(unit string) bool {
	return strings.HasSuffix(unit, "per_s") || strings.HasSuffix(unit, "/s")
}

func (q Ratio) header(t Table) string {
	switch {
	case q.Plain:
		return q.Of + "/" + q.To
	case len(t.Columns) == 2:
		return q.Of + " better by"
	default:
		return q.Of + " better than " + q.To + " by"
	}
}

func (q Ratio) format(t Table, r Row) string {
	of := r.value(slices.Index(t.Columns, q.Of))
	to := r.value(slices.Index(t.Columns, q.To))
	switch {
	case q.Plain:
		if !(to > 0) || !(of >= 0) { // also NaN
			return "-"
		}
	case !(of > 0) || !(to > 0):
		return "-"
	case !HigherIsBetter(r.Unit):
		of, to = to, of
	}
	return fmt.Sprintf("%.2fx", of/to)
}

// formatValue prints about three significant figures: 2224, 816.3, 1.06.
func formatValue(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v):
		return "-"
	case a >= 1000:
		return fmt.Sprintf("%.0f", v)
	case a >= 100:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// WriteTable writes t as text: the title, then a header line and one line
// per row with the columns metric, one per implementation, unit and one per
// ratio, separated by two spaces; names are left-aligned, numbers right.
// It returns ErrShape, writing nothing, when a row has more values than t
// has columns or a ratio names a column t does not have.
func WriteTable(w io.Writer, t Table) error {
	for _, q := range t.Ratios {
		if !slices.Contains(t.Columns, q.Of) || !slices.Contains(t.Columns, q.To) {
			return fmt.Errorf("%w: ratio %s/%s of columns %v", ErrShape, q.Of, q.To, t.Columns)
		}
	}
	for _, r := range t.Rows {
		if len(r.Values) > len(t.Columns) {
			return fmt.Errorf("%w: row %q has %d values for %d columns", ErrShape, r.Metric, len(r.Values), len(t.Columns))
		}
	}
	// cells[0] is the header; right[i] says column i is right-aligned.
	var right []bool
	head := []string{"metric"}
	right = append(right, false)
	for _, c := range t.Columns {
		head, right = append(head, c), append(right, true)
	}
	head, right = append(head, "unit"), append(right, false)
	for _, q := range t.Ratios {
		head, right = append(head, q.header(t)), append(right, true)
	}
	cells := [][]string{head}
	for _, r := range t.Rows {
		line := []string{r.Metric}
		for c := range t.Columns {
			line = append(line, formatValue(r.value(c)))
		}
		line = append(line, r.Unit)
		for _, q := range t.Ratios {
			line = append(line, q.format(t, r))
		}
		cells = append(cells, line)
	}
	width := make([]int, len(head))
	for _, line := range cells {
		for i, s := range line {
			width[i] = max(width[i], len(s))
		}
	}
	var b strings.Builder
	if t.Title != "" {
		b.WriteString(t.Title + "\n")
	}
	for _, line := range cells {
		var l strings.Builder
		for i, s := range line {
			if i > 0 {
				l.WriteString("  ")
			}
			pad := strings.Repeat(" ", width[i]-len(s))
			if right[i] {
				l.WriteString(pad + s)
			} else {
				l.WriteString(s + pad)
			}
		}
		b.WriteString(strings.TrimRight(l.String(), " ") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
