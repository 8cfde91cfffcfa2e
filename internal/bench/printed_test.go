package bench

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPrinted(t *testing.T) {
	t.Parallel()
	one := Table{Columns: []string{"a"}, Rows: []Row{{Metric: "m", Values: []float64{1}, Unit: "ms"}}}
	two := Table{Title: "second", Columns: []string{"a"}, Rows: []Row{{Metric: "n", Values: []float64{2}, Unit: "1/s"}}}
	p := Printed{Result: map[string]int{"x": 1}, Tables: []Table{one, two}, Notes: []string{"n1"},
		Then: func(w io.Writer) error { _, err := io.WriteString(w, "after\n"); return err }}

	b, err := json.Marshal(p)
	require.NoError(t, err)
	require.JSONEq(t, `{"x":1}`, string(b), "JSON is the result itself")

	var want bytes.Buffer
	require.NoError(t, WriteTable(&want, one))
	want.WriteString("\n")
	require.NoError(t, WriteTable(&want, two))
	want.WriteString("note: n1\nafter\n")
	var got bytes.Buffer
	require.NoError(t, p.WriteSimple(&got))
	require.Equal(t, want.String(), got.String())
}

type oneTable struct{ t Table }

func (r oneTable) Table() Table { return r.t }

type moreTables struct{ oneTable }

func (r moreTables) Printed() Printed {
	return Printed{Result: r, Tables: []Table{r.t, {Title: "more"}}}
}

func TestPrintedOf(t *testing.T) {
	t.Parallel()
	one := Table{Columns: []string{"a"}, Rows: []Row{{Metric: "m", Values: []float64{1}, Unit: "ms"}}}
	p := PrintedOf(oneTable{one})
	require.Equal(t, []Table{one}, p.Tables, "a result with a table prints it")
	require.Equal(t, oneTable{one}, p.Result)
	p = PrintedOf(moreTables{oneTable{one}})
	require.Equal(t, []Table{one, {Title: "more"}}, p.Tables, "a result with a Printed form prints that")
}
