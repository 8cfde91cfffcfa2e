package report

import (
	"errors"
	"fmt"
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
