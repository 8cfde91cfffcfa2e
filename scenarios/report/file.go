package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// WriteHTMLFile writes the reports' page (WriteHTML) to path, titled
// "coordkit scenario NAME" for one report and "coordkit scenarios" for
// several. It writes path.tmp and renames it, so a reader never sees half
// a page; on an error it removes the temporary file.
func WriteHTMLFile(path string, reports []*Report) error {
	title := "coordkit scenario " + reports[0].Name
	if len(reports) > 1 {
		title = "coordkit scenarios"
	}
	tmp := path + ".tmp"
	fh, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	werr := WriteHTML(fh, title, reports)
	cerr := fh.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write report %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// Results is the reports of one run of one or All scenarios: as text
// WriteText (WriteTextAll with All), as JSON the report (with All, the
// array of them).
type Results struct {
	Reports []*Report
	All     bool
}

// MarshalJSON writes the report, or with All the array.
func (r Results) MarshalJSON() ([]byte, error) {
	if r.All {
		return json.Marshal(r.Reports)
	}
	return json.Marshal(r.Reports[0])
}

// WriteText writes the report, or with All every report.
func (r Results) WriteText(w io.Writer) error {
	if r.All {
		return WriteTextAll(w, r.Reports)
	}
	return WriteText(w, r.Reports[0])
}

// Failed returns the names of the reports that did not pass and were not
// skipped, in order.
func (r Results) Failed() []string {
	var out []string
	for _, rep := range r.Reports {
		if !rep.Passed && rep.Skipped == "" {
			out = append(out, rep.Name)
		}
	}
	return out
}
