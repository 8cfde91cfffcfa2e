package lamport

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func mustTrace(t *testing.T, script string) *Trace {
	t.Helper()
	tr, err := ParseTrace(strings.NewReader(script))
	require.NoError(t, err)
	return tr
}

// The View of the textbook example, as JSON: events with timestamps and
// vectors, the order, the concurrent pairs, no nil slices.
func TestViewExample(t *testing.T) {
	v := mustTrace(t, ExampleScript).View()
	require.Len(t, v.Events, 4)
	recv := v.Events[3]
	require.Equal(t, ViewEvent{Line: 6, Event: "B recv A", Node: "B", Op: OpRecv, Peer: "A", Lamport: "(3,B)", Counter: 3,
		Vector: recv.Vector, Received: recv.Received}, recv)
	require.Equal(t, "{A:2,B:2}", recv.Vector.String())
	require.NotNil(t, recv.Received)
	require.Equal(t, Time(2), *recv.Received)
	require.Nil(t, v.Events[0].Received, "only a receive carries a received counter")
	require.Equal(t, []string{"(1,A)", "(1,B)", "(2,A)", "(3,B)"}, v.Order)
	require.Equal(t, []ViewPair{{"(1,A)", "(1,B)"}, {"(1,B)", "(2,A)"}}, v.Concurrent)
	b, err := json.Marshal(v)
	require.NoError(t, err)
	require.Contains(t, string(b), `"in_flight":[]`)
	require.Contains(t, string(b), `"op":"recv","peer":"A"`)
	require.NotContains(t, string(b), `"peer":""`)
}

func TestWriteText(t *testing.T) {
	var b strings.Builder
	require.NoError(t, mustTrace(t, ExampleScript).WriteText(&b))
	out := b.String()
	require.Contains(t, out, "  LINE  EVENT     LAMPORT  VECTOR     RULE\n")
	require.Contains(t, out, "receive: max(1,2)+1")
	require.Contains(t, out, "send: 1+1, message carries 2")
	require.Contains(t, out, "  (1,A) < (1,B) < (2,A) < (3,B)\n")
	require.Contains(t, out, "(1,A) || (1,B)")
	require.Contains(t, out, "ranked by node id only")
	require.Contains(t, out, "(1,B) || (2,A)")
	require.Contains(t, out, "ranked by counter")
	require.NotContains(t, out, "never received")

	b.Reset()
	require.NoError(t, mustTrace(t, "A send B\nB recv A\nB send C\n").WriteText(&b))
	require.Contains(t, b.String(), "none: every pair of events is causally ordered")
	require.Contains(t, b.String(), "Messages never received:\n  (3,B) sent by B to C (line 3)\n")

	b.Reset()
	require.NoError(t, mustTrace(t, "# nothing\n").WriteText(&b))
	require.Contains(t, b.String(), "(no events)")
}

// A Report frames the textbook example, and only the example, with the
// theory's reading; its JSON is the View.
func TestReport(t *testing.T) {
	tr := mustTrace(t, ExampleScript)
	var b strings.Builder
	require.NoError(t, Report{Trace: tr, Example: true}.WriteText(&b))
	require.True(t, strings.HasPrefix(b.String(), "The example from the theory"))
	require.True(t, strings.HasSuffix(b.String(), "See 'coordctl claim'.\n"))
	b.Reset()
	require.NoError(t, Report{Trace: tr}.WriteText(&b))
	require.True(t, strings.HasPrefix(b.String(), "Events, in script order:\n"))
	got, err := json.Marshal(Report{Trace: tr})
	require.NoError(t, err)
	want, err := json.Marshal(tr.View())
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got))
}
