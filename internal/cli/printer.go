package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
)

// Output formats of -w/--write-out.
const (
	formatSimple = "simple"
	formatJSON   = "json"
)

// simpleWriter is implemented by results that have a readable form; others
// are printed with fmt's %v in simple mode.
type simpleWriter interface {
	WriteSimple(w io.Writer) error
}

// printer writes results in the format chosen by -w. JSON is the stable
// contract: one object per line, so streams can be read line by line.
type printer struct {
	mu     sync.Mutex
	format string
	out    io.Writer
}

func newPrinter(format string, out io.Writer) (*printer, error) {
	switch format {
	case formatSimple, formatJSON:
		return &printer{format: format, out: out}, nil
	default:
		return nil, usageErrorf("invalid --write-out %q: want simple or json", format)
	}
}

// JSON reports whether the printer writes JSON.
func (p *printer) JSON() bool { return p.format == formatJSON }

// Print writes one result. Safe for concurrent use.
func (p *printer) Print(v any) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.format == formatJSON {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode output: %w", err)
		}
		b = append(b, '\n')
		_, err = p.out.Write(b)
		return err
	}
	if s, ok := v.(simpleWriter); ok {
		return s.WriteSimple(p.out)
	}
	_, err := fmt.Fprintln(p.out, v)
	return err
}
