package cmdutil

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
)

// Output formats of -w/--write-out.
const (
	FormatSimple = "simple"
	FormatJSON   = "json"
)

// simpleWriter is implemented by results that have a readable form; others
// are printed with fmt's %v in simple mode.
type simpleWriter interface {
	WriteSimple(w io.Writer) error
}

// Printer writes results in the format chosen by -w. JSON is the stable
// contract: one object per line, so streams can be read line by line.
type Printer struct {
	mu     sync.Mutex
	format string
	out    io.Writer
	// brokenOut, when set, receives the one note of a failed write, after
	// which Print prints nothing and returns nil (HoldOutput).
	brokenOut io.Writer
	broken    bool
}

// NewPrinter returns the printer of -w format on out; an unknown format is
// a usage error.
func NewPrinter(format string, out io.Writer) (*Printer, error) {
	switch format {
	case FormatSimple, FormatJSON:
		return &Printer{format: format, out: out}, nil
	default:
		return nil, UsageErrorf("invalid --write-out %q: want simple or json", format)
	}
}

// JSON reports whether the printer writes JSON.
func (p *Printer) JSON() bool { return p.format == FormatJSON }

// Print writes one result. Safe for concurrent use.
func (p *Printer) Print(v any) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.broken {
		return nil
	}
	err := p.write(v)
	if err != nil && p.brokenOut != nil {
		p.broken = true
		fmt.Fprintf(p.brokenOut, "coordctl: cannot write to standard output (%v): holding on, printing nothing more there\n", err)
		return nil
	}
	return err
}

func (p *Printer) write(v any) error {
	if p.format == FormatJSON {
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

// KeepGoingOnWriteError makes a failed write harmless: it is noted once on
// errOut and nothing more is printed (see HoldOutput).
func (p *Printer) KeepGoingOnWriteError(errOut io.Writer) {
	p.mu.Lock()
	p.brokenOut = errOut
	p.mu.Unlock()
}
