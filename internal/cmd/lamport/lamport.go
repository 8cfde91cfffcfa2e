package lamportcmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/lamport"
)

// NewCmd returns the command coordctl lamport.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lamport",
		Short: "Lamport clocks and vector clocks, on a scripted history",
		Long: `Lamport clocks give every event a timestamp (counter,node) such that if a
happened before b, a's timestamp is smaller. Ordered by counter and then by
node, the timestamps form a total order that every node agrees on.

The converse does not hold: a smaller timestamp does not mean "happened
before". Vector clocks recover the causal (partial) order and show which
events are concurrent. And the total order is known only once timestamps
meet, after both nodes have acted, so it cannot decide "is this name free
now?". For that, see 'coordctl claim'.`,
		Example: `  coordctl lamport trace                 # the textbook example
  coordctl lamport trace history.txt
  printf 'A send B\nB recv A\n' | coordctl lamport trace - -w json`,
		Args: cmdutil.ArgsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newLamportTraceCmd(f))
	return cmd
}

type lamportTraceOptions struct {
	File string // "" runs lamport.ExampleScript; "-" reads stdin
}

func newLamportTraceCmd(f *cmdutil.Factory) *cobra.Command {
	opts := &lamportTraceOptions{}
	return &cobra.Command{
		Use:   "trace [FILE]",
		Short: "Apply Lamport and vector clocks to an event script",
		Long: `Read an event script, one event a line, and apply the clock rules:

  A local      a local event on A          Lamport: counter+1
  A send B     A sends a message to B      Lamport: counter+1, attached to the message
  B recv A     B receives the oldest       Lamport: max(counter, message)+1
               undelivered message from A

Blank lines and text after # are ignored. Every node's clock starts at 0.

Prints each event with its Lamport timestamp and vector clock, then the total
(Lamport) order, then every pair of events that are concurrent (neither
happened before the other, by vector clock) although the total order ranks
one first. With -w json: one object {"events","order","concurrent",
"in_flight"}.

Without FILE it runs the textbook example: A does two operations, (1,A) and
(2,A), the second sending A's counter 2 to B; B, whose counter is 1, takes
the maximum and adds one: (3,B). FILE "-" reads standard input.

A malformed line (unknown verb, wrong number of words, a message to self, a
receive with nothing in flight) is an error naming the line: exit 2.`,
		Example: `  coordctl lamport trace
  coordctl lamport trace history.txt
  printf 'A local\nA send B\nB local\nB recv A\n' | coordctl lamport trace -
  coordctl lamport trace -w json | jq '.concurrent'`,
		Args: cmdutil.ArgsUsage(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.File = args[0]
			}
			return runLamportTrace(f, opts)
		},
	}
}

// runLamportTrace reads the script, simulates it and prints the result.
func runLamportTrace(f *cmdutil.Factory, opts *lamportTraceOptions) error {
	var r io.Reader
	source := opts.File
	switch opts.File {
	case "":
		r, source = strings.NewReader(lamport.ExampleScript), "example"
	case "-":
		r, source = f.IO.In, "stdin"
	default:
		file, err := os.Open(opts.File)
		if err != nil {
			return err
		}
		defer file.Close()
		r = file
	}
	tr, err := lamport.ParseTrace(r)
	if err != nil {
		var le *lamport.LineError
		if errors.As(err, &le) {
			return cmdutil.UsageErrorf("%s: %v", source, err)
		}
		return fmt.Errorf("%s: %w", source, err)
	}
	return cmdutil.PrintResult(f, cmdutil.TextOutput{V: lamport.Report{Trace: tr, Example: opts.File == ""}})
}
