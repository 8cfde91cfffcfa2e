package sqlcli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/coordkit/coordkit/fencing"
)

// The outcomes in a Result's and an OutcomeError's JSON.
const (
	// Committed: the check and the statements committed.
	Committed = "committed"
	// Unknown: COMMIT was sent and its answer lost.
	Unknown = "unknown"
	// OutsideFence: statements ran outside the fenced transaction.
	OutsideFence = "outside_fence"
)

// Result is what a run printed. Its JSON is the commands' contract:
// Exec {"scope","token","floor","rows_affected":[N,...],"outcome":"committed"},
// Fence {"scope","token","floor","outcome"}, Floor and HighestFloor
// {"scope","floor"} (HighestFloor's scope is "" when no scope was admitted).
type Result struct {
	// Op is the run's, which chooses the text form.
	Op           Op            `json:"-"`
	Scope        string        `json:"scope"`
	Token        fencing.Token `json:"token,omitempty"`
	Floor        fencing.Token `json:"floor"`
	RowsAffected []int64       `json:"rows_affected,omitempty"`
	Outcome      string        `json:"outcome,omitempty"`
}

// WriteText writes "ok scope=S token=T floor=F rows_affected=N,M" for
// Exec, the same without rows_affected for Fence, and the floor alone, for
// scripts, for Floor and HighestFloor.
func (r Result) WriteText(w io.Writer) error {
	if r.Op == Floor || r.Op == HighestFloor {
		_, err := fmt.Fprintln(w, r.Floor)
		return err
	}
	line := fmt.Sprintf("ok scope=%s token=%d floor=%d", r.Scope, r.Token, r.Floor)
	if r.Op == Exec {
		rows := make([]string, len(r.RowsAffected))
		for i, n := range r.RowsAffected {
			rows[i] = strconv.FormatInt(n, 10)
		}
		line += " rows_affected=" + strings.Join(rows, ",")
	}
	_, err := fmt.Fprintln(w, line)
	return err
}

// OutcomeError says that the outcome of Exec or Fence is not known: COMMIT
// was sent and its answer lost (Outcome Unknown, matching
// sqlfence.ErrCommitUnknown), or statements ran outside the fenced
// transaction (OutsideFence, matching sqlfence.ErrOutsideFence). The
// writes and the floor may have been committed.
type OutcomeError struct {
	Scope   string
	Token   fencing.Token
	Outcome string
	// Err is what happened, in words that name the database (never its
	// password); it matches sqlfence.ErrCommitUnknown or ErrOutsideFence.
	Err error
}

func (e *OutcomeError) Error() string { return e.Err.Error() }
func (e *OutcomeError) Unwrap() error { return e.Err }

// MarshalJSON gives {"scope","token","outcome","error"}.
func (e *OutcomeError) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Scope   string        `json:"scope"`
		Token   fencing.Token `json:"token"`
		Outcome string        `json:"outcome"`
		Error   string        `json:"error"`
	}{e.Scope, e.Token, e.Outcome, e.Error()})
}
