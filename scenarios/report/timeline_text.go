package report

import (
	"bytes"
	"io"
)

// WriteTimeline writes the character picture of tl alone, as WriteText
// draws it inside a report (a bench prints one next to its table).
func WriteTimeline(w io.Writer, tl *Timeline) error {
	var buf bytes.Buffer
	writeTimelineText(&buf, tl)
	_, err := w.Write(buf.Bytes())
	return err
}
