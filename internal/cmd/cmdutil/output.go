package cmdutil

import (
	"encoding/json"
	"io"
	"os"

	"github.com/chzyer/readline"
)

// TextOutput prints a result that writes its own text (labcmd.Output, a
// sweep's or the demo's reports) through the printer: JSON as the value
// marshals, simple as its WriteText.
type TextOutput struct{ V textWriter }

type textWriter interface{ WriteText(io.Writer) error }

func (o TextOutput) MarshalJSON() ([]byte, error)  { return json.Marshal(o.V) }
func (o TextOutput) WriteSimple(w io.Writer) error { return o.V.WriteText(w) }

// IsTerminal reports whether w is a terminal: stdin then gets line
// editing, and stderr's progress line redraws itself.
func IsTerminal(w any) bool {
	fh, ok := w.(*os.File)
	return ok && readline.IsTerminal(int(fh.Fd()))
}
