package electbench

import (
	"os"

	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/scenarios/report"
)

// Printed is r as `coordctl bench elect --rolling` prints it: its own JSON;
// as text the table, then the timelines.
func (r RollingResult) Printed() bench.Printed {
	return bench.Printed{Result: r, Tables: []bench.Table{r.Table()}, Then: r.WriteTimelines}
}

// WriteHTMLFile writes the rolls' timelines and figures (Reports) as one
// HTML page to the file at path.
func (r RollingResult) WriteHTMLFile(path string) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := report.WriteHTML(fh, "coordctl bench elect --rolling", r.Reports()); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}
