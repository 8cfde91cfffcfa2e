package lamport

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLamportTraceExample(t *testing.T) {
	tr, err := ParseTrace(strings.NewReader(ExampleScript))
	require.NoError(t, err)
	var stamps, vectors []string
	for _, e := range tr.Events {
		stamps = append(stamps, e.Timestamp.String())
		vectors = append(vectors, e.Vector.String())
	}
	require.Equal(t, []string{"(1,A)", "(1,B)", "(2,A)", "(3,B)"}, stamps)
	require.Equal(t, []string{"{A:1}", "{B:1}", "{A:2}", "{A:2,B:2}"}, vectors)
	require.Equal(t, []int{0, 1, 2, 3}, tr.Order)

	recv := tr.Events[3]
	require.Equal(t, OpRecv, recv.Op)
	require.Equal(t, Time(1), recv.Prior)
	require.Equal(t, Time(2), recv.Received)
	require.Equal(t, 2, recv.From)
	require.Equal(t, 3, tr.Events[2].To)
	require.Equal(t, 6, recv.Line)

	// B's local op is concurrent with both of A's, though Lamport order ranks it.
	require.Equal(t, []Pair{{First: 0, Second: 1}, {First: 1, Second: 2}}, tr.Concurrent)
	require.Equal(t, Before, tr.Relation(2, 3))
	require.Equal(t, Before, tr.Relation(0, 3))
	require.Empty(t, tr.InFlight)
}

func TestLamportTraceOrderIsTotalAcrossScriptOrder(t *testing.T) {
	// B's events come first in the script, but (1,A) still orders before (1,B).
	tr, err := ParseTrace(strings.NewReader("B local\nA local\nB send A\nA recv B\nA send C\n"))
	require.NoError(t, err)
	var order []string
	for _, i := range tr.Order {
		order = append(order, tr.Events[i].Timestamp.String())
	}
	require.Equal(t, []string{"(1,A)", "(1,B)", "(2,B)", "(3,A)", "(4,A)"}, order)
	require.Equal(t, []int{4}, tr.InFlight)
}

func TestLamportTraceErrors(t *testing.T) {
	cases := []struct {
		name   string
		script string
		line   int
		text   string
		want   error
	}{
		{"unknown verb", "A local\nA sned B\n", 2, "A sned B", ErrUnknownVerb},
		{"one word", "\n\nA\n", 3, "A", ErrArity},
		{"local with peer", "A local B", 1, "A local B", ErrArity},
		{"send without peer", "# c\nA send", 2, "A send", ErrArity},
		{"recv too many", "A recv B C", 1, "A recv B C", ErrArity},
		{"send to self", "A send A", 1, "A send A", ErrSelf},
		{"recv nothing in flight", "A local\nB recv A  # too early\n", 2, "B recv A", ErrNothingInFlight},
		{"recv after queue drained", "A send B\nB recv A\nB recv A\n", 3, "B recv A", ErrNothingInFlight},
		{"recv from wrong sender", "A send B\nB recv C\n", 2, "B recv C", ErrNothingInFlight},
		{"bad node name", "A,1 local", 1, "A,1 local", ErrBadNode},
		{"NUL in a node name", "A local\nB\x00 send A\n", 2, "B\x00 send A", ErrBadNode},
		{"control character in a node name", "A\x1b[1m local", 1, "A\x1b[1m local", ErrBadNode},
		{"invalid UTF-8 in a node name", "A\xff local", 1, "A\xff local", ErrBadNode},
		{"byte order mark after line 1", "A local\n\ufeffB local\n", 2, "\ufeffB local", ErrBadNode},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTrace(strings.NewReader(tc.script))
			require.ErrorIs(t, err, tc.want)
			var le *LineError
			require.True(t, errors.As(err, &le), "%v", err)
			require.Equal(t, tc.line, le.Line)
			require.Equal(t, tc.text, le.Text)
			require.Contains(t, err.Error(), "line ")
			require.Contains(t, err.Error(), strconv.Quote(tc.text))
		})
	}
}

// A line over MaxLineLen is an error naming its line, not bufio's "token
// too long"; a line of exactly MaxLineLen bytes is read.
func TestLamportTraceLineTooLong(t *testing.T) {
	long := "A local #" + strings.Repeat("x", MaxLineLen)
	_, err := ParseTrace(strings.NewReader("A local\n" + long + "\nB local\n"))
	require.ErrorIs(t, err, ErrLineTooLong)
	var le *LineError
	require.True(t, errors.As(err, &le), "%v", err)
	require.Equal(t, 2, le.Line)
	require.True(t, strings.HasPrefix(err.Error(), "line 2: "), err.Error())
	require.Contains(t, err.Error(), "too long")
	require.NotContains(t, err.Error(), "bufio")
	require.Less(t, len(err.Error()), 200, "the error quotes the whole line")

	exact := "A local #" + strings.Repeat("x", MaxLineLen-len("A local #"))
	tr, err := ParseTrace(strings.NewReader(exact + "\r\n" + exact))
	require.NoError(t, err)
	require.Len(t, tr.Events, 2)
}

// A UTF-8 byte order mark at the start of the script is stripped; it does
// not become part of the first node's name.
func TestLamportTraceByteOrderMarkIsStripped(t *testing.T) {
	tr, err := ParseTrace(strings.NewReader("\ufeffA send B\nB recv A\n"))
	require.NoError(t, err)
	require.Equal(t, NodeID("A"), tr.Events[0].Node)
	require.Equal(t, NodeID("A"), tr.Events[1].Peer)
}

func TestLamportTraceEmptyAndComments(t *testing.T) {
	tr, err := ParseTrace(strings.NewReader("\n# nothing\n   \n"))
	require.NoError(t, err)
	require.Empty(t, tr.Events)
	require.Empty(t, tr.Order)
	require.Empty(t, tr.Concurrent)
}

func TestLamportSimulateRejectsSelfMessage(t *testing.T) {
	_, err := Simulate([]Step{{Node: "A", Op: OpRecv, Peer: "A"}})
	require.ErrorIs(t, err, ErrSelf)
}
