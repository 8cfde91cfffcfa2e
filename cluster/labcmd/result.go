package labcmd

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/coordkit/coordkit/cluster"
)

// Result is what a command returns. WriteText writes what the lab shell
// prints; json.Marshal gives its fields (names stable, see each type).
type Result interface {
	WriteText(w io.Writer) error
}

// Output is one command's outcome as the shell prints it: the command's
// name, its result and its error. A failed client operation has both (an
// OpFailure and the error).
type Output struct {
	Cmd    string
	Result Result
	Err    error
}

// MarshalJSON writes one object: the result's fields with "cmd", "ok" and,
// on failure, "error". A result that is not a JSON object goes under
// "result".
func (o Output) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	if o.Result != nil {
		b, err := json.Marshal(o.Result)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &m); err != nil {
			m = map[string]any{"result": o.Result}
		}
	}
	m["cmd"] = o.Cmd
	m["ok"] = o.Err == nil
	if o.Err != nil {
		m["error"] = o.Err.Error()
	}
	return json.Marshal(m)
}

// WriteText writes the result's text, or "error: …" on failure, or "ok"
// for a command without a result.
func (o Output) WriteText(w io.Writer) error {
	if o.Err != nil {
		if f, ok := o.Result.(OpFailure); ok {
			_, err := fmt.Fprintf(w, "error: %v (outcome %s after %.0fms)\n", o.Err, f.Outcome, f.LatencyMs)
			return err
		}
		_, err := fmt.Fprintf(w, "error: %v\n", o.Err)
		return err
	}
	if o.Result == nil {
		_, err := fmt.Fprintln(w, "ok")
		return err
	}
	return o.Result.WriteText(w)
}

// Text is a one-line result: partition, isolate, cut, heal, delay, crash,
// restart, pause, resume, wait. JSON: {"message"}.
type Text struct {
	Message string `json:"message"`
}

// WriteText writes the message.
func (t Text) WriteText(w io.Writer) error {
	_, err := fmt.Fprintln(w, t.Message)
	return err
}

// LeaderResult is the result of leader. JSON: {"leader","term"}; leader 0
// means none.
type LeaderResult struct {
	Leader cluster.NodeID `json:"leader"`
	Term   uint64         `json:"term"`
}

// WriteText writes "leader N (term T)" or "no leader".
func (l LeaderResult) WriteText(w io.Writer) error {
	if l.Leader == 0 {
		_, err := fmt.Fprintln(w, "no leader")
		return err
	}
	_, err := fmt.Fprintf(w, "leader %d (term %d)\n", l.Leader, l.Term)
	return err
}

// OpResult is the result of a client operation that succeeded: put, get,
// cas, delete. JSON: {"op","key","value"?,"found"?,"swapped"?,"mode"?,
// "node","entry","hops","outcome","latency_ms"}.
type OpResult struct {
	Op        string         `json:"op"`
	Key       string         `json:"key"`
	Value     *string        `json:"value,omitempty"`
	Found     *bool          `json:"found,omitempty"`
	Swapped   *bool          `json:"swapped,omitempty"`
	Mode      string         `json:"mode,omitempty"`
	Node      cluster.NodeID `json:"node"`
	Entry     cluster.NodeID `json:"entry"`
	Hops      int            `json:"hops"`
	Outcome   string         `json:"outcome"`
	LatencyMs float64        `json:"latency_ms"`
}

// WriteText writes one line: the value read or what changed, the node
// that answered, the forwarding hop if any, the latency.
func (r OpResult) WriteText(w io.Writer) error {
	var b strings.Builder
	switch r.Op {
	case "get":
		if r.Found != nil && *r.Found {
			fmt.Fprintf(&b, "%s = %q", r.Key, deref(r.Value))
		} else {
			fmt.Fprintf(&b, "%s not found", r.Key)
		}
		fmt.Fprintf(&b, " (%s read at node %d", r.Mode, r.Node)
	case "cas":
		fmt.Fprintf(&b, "cas %s: swapped=%v (node %d", r.Key, r.Swapped != nil && *r.Swapped, r.Node)
	case "delete":
		fmt.Fprintf(&b, "deleted %s, existed=%v (node %d", r.Key, r.Found != nil && *r.Found, r.Node)
	default:
		fmt.Fprintf(&b, "ok (leader %d", r.Node)
	}
	if r.Hops > 0 {
		fmt.Fprintf(&b, ", via node %d", r.Entry)
	}
	fmt.Fprintf(&b, ", %.2fms)\n", r.LatencyMs)
	_, err := io.WriteString(w, b.String())
	return err
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// OpFailure goes with the error of a client operation that did not
// succeed. JSON: {"op","key","outcome","entry","latency_ms"}; outcome is
// fail or unknown (the operation may yet take effect).
type OpFailure struct {
	Op        string         `json:"op"`
	Key       string         `json:"key"`
	Outcome   string         `json:"outcome"`
	Entry     cluster.NodeID `json:"entry"`
	LatencyMs float64        `json:"latency_ms"`
}

// WriteText writes the outcome and latency; Output.WriteText puts the
// error in front.
func (f OpFailure) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "outcome %s after %.0fms\n", f.Outcome, f.LatencyMs)
	return err
}

// StatusResult is the result of status. JSON: cluster.Status's fields
// ({"leader","term","quorum","summary","nodes":[…]}).
type StatusResult struct {
	cluster.Status
}

// WriteText writes the summary, a table of nodes and each node's
// explanation.
func (s StatusResult) WriteText(w io.Writer) error { return s.Status.WriteSimple(w) }

// BenchResult is the result of bench writes. JSON: cluster.WriteStats's
// fields ({"writes","ok","fail","unknown","seconds","writes_per_s",
// "p50_ms","p99_ms","concurrency"}).
type BenchResult struct {
	cluster.WriteStats
}

// WriteText writes one line of counts, throughput and latency.
func (b BenchResult) WriteText(w io.Writer) error { return b.WriteStats.WriteSimple(w) }

// CheckResult is the result of check. JSON: {"linearizable","verdict",
// "ops","keys","illegal_keys"?}.
type CheckResult struct {
	Linearizable bool     `json:"linearizable"`
	Verdict      string   `json:"verdict"`
	Ops          int      `json:"ops"`
	Keys         int      `json:"keys"`
	IllegalKeys  []string `json:"illegal_keys,omitempty"`
}

// WriteText writes the verdict and, if it is not linearizable, the keys
// no order explains.
func (c CheckResult) WriteText(w io.Writer) error {
	verdict := "linearizable"
	if !c.Linearizable {
		verdict = "NOT linearizable"
		if c.Verdict == "Unknown" {
			verdict = "unknown (checker timed out)"
		}
	}
	var bad string
	if len(c.IllegalKeys) > 0 {
		bad = " (no order explains key " + strings.Join(c.IllegalKeys, ", ") + "; see history FILE.html)"
	}
	_, err := fmt.Fprintf(w, "%s: %d operations on %d keys%s\n", verdict, c.Ops, c.Keys, bad)
	return err
}

// FileResult is the result of history and timeline. JSON: {"file",
// "ops"?}.
type FileResult struct {
	File string `json:"file"`
	Ops  int    `json:"ops,omitempty"`
}

// WriteText writes "wrote FILE".
func (f FileResult) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "wrote %s\n", f.File)
	return err
}

// LinksResult is the result of links. JSON: {"links":[…]} with
// cluster.LinkInfo's fields.
type LinksResult struct {
	Links []cluster.LinkInfo `json:"links"`
}

// WriteText writes a table, one directed link a row.
func (l LinksResult) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LINK\tDELAY\tJITTER\tLOSS\tCUT\tSENT\tDELIVERED\tDROPPED")
	for _, li := range l.Links {
		fmt.Fprintf(tw, "%d→%d\t%s\t%s\t%g\t%v\t%d\t%d\t%d\n", li.From, li.To, li.Delay, li.Jitter, li.Loss, li.Cut, li.Sent, li.Delivered, li.Dropped)
	}
	return tw.Flush()
}

// HelpResult is the result of help. JSON: {"commands":[…]}.
type HelpResult struct {
	Commands []string `json:"commands"`
}

// WriteText writes one usage line a command.
func (h HelpResult) WriteText(w io.Writer) error {
	for _, c := range h.Commands {
		if _, err := fmt.Fprintln(w, c); err != nil {
			return err
		}
	}
	return nil
}
