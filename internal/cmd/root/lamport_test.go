package root

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

// The -update flag rewrites golden files. It is registered in init, after
// every package-level flag.Bool, and only if no other test file of this
// package registered it already.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files in testdata/")
	}
}

func updateGolden() bool {
	fl := flag.Lookup("update")
	return fl != nil && fl.Value.String() == "true"
}

func requireGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if updateGolden() {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -run %s -update to create it", t.Name())
	require.Equal(t, string(want), got, "output differs from %s (go test -update rewrites it)", path)
}

// runWithStdin is runInProcess with stdin.
func runWithStdin(stdin string, args ...string) cliResult {
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, cmdutil.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut}, func(string) string { return "" })
	return cliResult{Code: code, Stdout: out.String(), Stderr: errOut.String()}
}

func TestLamportTraceExampleGolden(t *testing.T) {
	t.Parallel()
	res := runInProcess(context.Background(), nil, "lamport", "trace")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	require.Empty(t, res.Stderr)
	requireGolden(t, "lamport_trace_example.golden", res.Stdout)
	// The numbers the theory gives, in case the golden file is rewritten carelessly.
	require.Contains(t, res.Stdout, "(1,A) < (1,B) < (2,A) < (3,B)")
	require.Contains(t, res.Stdout, "receive: max(1,2)+1")
	require.Contains(t, res.Stdout, "(1,B) || (2,A)")
}

func TestLamportTraceJSON(t *testing.T) {
	t.Parallel()
	res := runInProcess(context.Background(), nil, "lamport", "trace", "-w", "json")
	require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
	require.Equal(t, 1, strings.Count(res.Stdout, "\n"), "one JSON object on one line")
	var out struct {
		Events []struct {
			Line     int
			Event    string
			Node     string
			Op       string
			Peer     string
			Lamport  string
			Counter  int
			Vector   map[string]int
			Received *int
		}
		Order      []string
		Concurrent []struct{ First, Second string }
		InFlight   []string `json:"in_flight"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &out))
	require.Len(t, out.Events, 4)
	recv := out.Events[3]
	require.Equal(t, "B recv A", recv.Event)
	require.Equal(t, "recv", recv.Op)
	require.Equal(t, "A", recv.Peer)
	require.Equal(t, "(3,B)", recv.Lamport)
	require.Equal(t, 3, recv.Counter)
	require.Equal(t, map[string]int{"A": 2, "B": 2}, recv.Vector)
	require.NotNil(t, recv.Received)
	require.Equal(t, 2, *recv.Received)
	require.Nil(t, out.Events[0].Received)
	require.Equal(t, []string{"(1,A)", "(1,B)", "(2,A)", "(3,B)"}, out.Order)
	require.Len(t, out.Concurrent, 2)
	require.Equal(t, "(1,B)", out.Concurrent[1].First)
	require.Equal(t, "(2,A)", out.Concurrent[1].Second)
	require.NotNil(t, out.InFlight)
	require.Empty(t, out.InFlight)
}

func TestLamportTraceInputs(t *testing.T) {
	t.Parallel()
	script := "# causal chain, then one message left in flight\nA send B\nB recv A\nB send C\nC recv B\nC send A\n"
	file := filepath.Join(t.TempDir(), "trace.txt")
	require.NoError(t, os.WriteFile(file, []byte(script), 0o644))

	for name, res := range map[string]cliResult{
		"file":  runInProcess(context.Background(), nil, "lamport", "trace", file),
		"stdin": runWithStdin(script, "lamport", "trace", "-"),
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, cmdutil.ExitOK, res.Code, res.Stderr)
			require.NotContains(t, res.Stdout, "The example from the theory", "the example text is only for the example")
			require.Contains(t, res.Stdout, "(1,A) < (2,B) < (3,B) < (4,C) < (5,C)")
			require.Contains(t, res.Stdout, "none: every pair of events is causally ordered")
			require.Contains(t, res.Stdout, "(5,C) sent by C to A (line 6)")
		})
	}
}

func TestLamportTraceErrors(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "nope.txt")
	cases := []struct {
		name  string
		stdin string
		args  []string
		code  int
		want  []string
	}{
		{"unknown verb", "A local\nA sned B\n", []string{"-"}, cmdutil.ExitUsage, []string{`stdin: line 2 "A sned B"`, "unknown verb"}},
		{"wrong arity", "A send\n", []string{"-"}, cmdutil.ExitUsage, []string{`line 1 "A send"`, "wrong number of words"}},
		{"send to self", "\nA send A\n", []string{"-"}, cmdutil.ExitUsage, []string{`line 2 "A send A"`, "message to self"}},
		{"nothing in flight", "A local\nB recv A\n", []string{"-"}, cmdutil.ExitUsage, []string{`line 2 "B recv A"`, "no message in flight"}},
		{"two files", "", []string{"a", "b"}, cmdutil.ExitUsage, []string{"accepts at most 1 arg"}},
		{"missing file", "", []string{missing}, cmdutil.ExitError, []string{"nope.txt"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := runWithStdin(tc.stdin, append([]string{"lamport", "trace"}, tc.args...)...)
			require.Equal(t, tc.code, res.Code, res.Stderr)
			require.Empty(t, res.Stdout)
			for _, w := range tc.want {
				require.Contains(t, res.Stderr, w)
			}
		})
	}
}

// docs/lamport.md quotes the example's output; keep it true.
func TestLamportDocQuotesExampleOutput(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "lamport.md"))
	require.NoError(t, err)
	golden, err := os.ReadFile(filepath.Join("testdata", "lamport_trace_example.golden"))
	require.NoError(t, err)
	require.Contains(t, string(doc), "$ coordctl lamport trace\n"+string(golden)+"```",
		"docs/lamport.md must quote the example output verbatim")
}
