package lamport

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParseSteps feeds arbitrary bytes to the event-file parser. It must
// not panic; every error is a *LineError naming a line; accepted node names
// are valid UTF-8 without control characters; and the accepted steps,
// written back one a line, parse to the same steps.
func FuzzParseSteps(f *testing.F) {
	for _, s := range []string{
		ExampleScript,
		"A send B\nB recv A\n",
		"\ufeffA local\r\n# comment\n\nB local",
		"A\x00 local\n",
		"A local #" + strings.Repeat("x", 100),
		"A sned B",
		"A,1 local",
		"\xff\xfe local",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		steps, err := ParseSteps(strings.NewReader(string(data)))
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) || le.Line < 1 {
				t.Fatalf("error %v is not a *LineError with a line", err)
			}
			return
		}
		var b strings.Builder
		last := 0
		for _, s := range steps {
			if s.Line <= last {
				t.Fatalf("line numbers not increasing: %d after %d", s.Line, last)
			}
			last = s.Line
			for _, n := range []NodeID{s.Node, s.Peer} {
				if !utf8.ValidString(string(n)) || checkNode(n) != nil || strings.ContainsRune(string(n), 0) {
					t.Fatalf("accepted node name %q", n)
				}
			}
			b.WriteString(s.String() + "\n")
		}
		again, err := ParseSteps(strings.NewReader(b.String()))
		if err != nil || len(again) != len(steps) {
			t.Fatalf("written back %q: %v", b.String(), err)
		}
		for i := range steps {
			a, c := steps[i], again[i]
			if a.Node != c.Node || a.Op != c.Op || a.Peer != c.Peer {
				t.Fatalf("step %d: %v became %v", i, a, c)
			}
		}
	})
}
