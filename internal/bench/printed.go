package bench

import (
	"encoding/json"
	"fmt"
	"io"
)

// Printed is a harness's result as a bench command prints it: as JSON the
// result itself (its -w json contract); as text its tables in the layout
// every bench shares, a blank line between two, then one "note: …" line per
// note, then whatever Then writes.
type Printed struct {
	Result any
	Tables []Table
	Notes  []string
	// Then, when set, writes what follows the tables in the text form
	// (electbench's rolling timelines).
	Then func(io.Writer) error
}

// PrintedOf is how a harness's result prints: its Printed form when it has
// one (lockbench's, with the uncontended breakdown after its table), else
// its one table.
func PrintedOf[R interface{ Table() Table }](res R) Printed {
	if p, ok := any(res).(interface{ Printed() Printed }); ok {
		return p.Printed()
	}
	return Printed{Result: res, Tables: []Table{res.Table()}}
}

// MarshalJSON is the result's own JSON form.
func (p Printed) MarshalJSON() ([]byte, error) { return json.Marshal(p.Result) }

// WriteSimple writes the text form.
func (p Printed) WriteSimple(w io.Writer) error {
	for i, t := range p.Tables {
		if i > 0 {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		if err := WriteTable(w, t); err != nil {
			return err
		}
	}
	for _, n := range p.Notes {
		if _, err := fmt.Fprintf(w, "note: %s\n", n); err != nil {
			return err
		}
	}
	if p.Then != nil {
		return p.Then(w)
	}
	return nil
}
