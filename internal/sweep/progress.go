package sweep

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Progress is the progress line on stderr: done/total, a bar, the elapsed
// time and an estimate of the rest (from the mean time per trial so far).
// On a terminal it redraws one line; elsewhere it prints a line every
// tenth of the work. A nil *Progress does nothing.
type Progress struct {
	mu       sync.Mutex
	w        io.Writer
	tty      bool
	label    string
	total    int
	done     int
	errors   int
	start    time.Time
	now      func() time.Time
	lastTick int
}

// NewProgress starts a progress line for total trials.
func NewProgress(w io.Writer, tty bool, label string, total int, now func() time.Time) *Progress {
	if now == nil {
		now = time.Now
	}
	return &Progress{w: w, tty: tty, label: label, total: total, start: now(), now: now, lastTick: -1}
}

// Line formats the progress after done of total trials, elapsed in: pure.
func Line(label string, done, total, errors int, elapsed time.Duration) string {
	const width = 24
	filled := 0
	if total > 0 {
		filled = done * width / total
	}
	s := fmt.Sprintf("%s [%s%s] %d/%d", label, strings.Repeat("#", filled), strings.Repeat(".", width-filled), done, total)
	if errors > 0 {
		s += fmt.Sprintf(" (%d errors)", errors)
	}
	s += fmt.Sprintf(", %s elapsed", elapsed.Round(time.Second))
	if done > 0 && done < total {
		left := time.Duration(float64(elapsed) / float64(done) * float64(total-done))
		s += fmt.Sprintf(", about %s left", left.Round(time.Second))
	}
	return s
}

// Step counts one finished trial.
func (p *Progress) Step(failed bool) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	if failed {
		p.errors++
	}
	line := Line(p.label, p.done, p.total, p.errors, p.now().Sub(p.start))
	if p.tty {
		fmt.Fprintf(p.w, "\r%s\x1b[K", line)
		return
	}
	if tick := p.done * 10 / max(p.total, 1); tick != p.lastTick {
		p.lastTick = tick
		fmt.Fprintln(p.w, line)
	}
}

// Done ends the line.
func (p *Progress) Done() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.done > 0 {
		fmt.Fprintln(p.w)
	}
}
