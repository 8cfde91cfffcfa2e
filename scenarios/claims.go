package scenarios

import (
	"fmt"
	"strings"

	"github.com/coordkit/coordkit/scenarios/report"
)

// ClaimID names one claim of a scenario, unique within it, in lower case
// with dashes ("lost-update"). It is declared once, in Scenario.Claims, with
// the claim's text and kind; the run checks the claim by its ID (check), and
// Registry.Run fills in the text and kind and verifies that the run checked
// exactly the declared claims.
type ClaimID string

// Kind says whether a claim can be judged on any machine.
type Kind string

// Kinds of claim.
const (
	// Safety claims say what never happens (a lost write, two owners, a
	// stale read through readindex) or what happens in some order; they are
	// judged exactly and hold on a loaded machine too. `make test` requires
	// them.
	Safety Kind = "safety"
	// Timing claims compare measured latencies with a model or bound them
	// from above (a write within ±20% of a round trip, a failover within a
	// TTL). A loaded machine can miss them, so tests do not require them;
	// `coordctl scenario run` reports them like any claim.
	Timing Kind = "timing"
)

// Claim is one claim of theory a scenario tests.
type Claim struct {
	ID   ClaimID
	Kind Kind
	// Text is the claim as the reader would state it; it is the "claim"
	// field of the report's verdict.
	Text string
}

// ClaimsError is returned (wrapping ErrClaims) by Registry.Run when a run
// did not check exactly the claims its scenario declares: a bug in the
// scenario, not a verdict on the theory.
type ClaimsError struct {
	Scenario string
	// Unchecked are declared claims the run did not check.
	Unchecked []ClaimID
	// Undeclared are IDs the run checked that the scenario does not declare
	// ("" for a verdict recorded without an ID).
	Undeclared []ClaimID
}

func (e *ClaimsError) Error() string {
	var parts []string
	if len(e.Unchecked) > 0 {
		parts = append(parts, fmt.Sprintf("declared but not checked: %v", e.Unchecked))
	}
	if len(e.Undeclared) > 0 {
		parts = append(parts, fmt.Sprintf("checked but not declared: %q", e.Undeclared))
	}
	return fmt.Sprintf("scenarios: %s: claims %s", e.Scenario, strings.Join(parts, "; "))
}

// Unwrap returns ErrClaims.
func (e *ClaimsError) Unwrap() error { return ErrClaims }

// check records the verdict on the claim id and returns holds.
func check(rep *report.Report, id ClaimID, expected, observed string, holds bool) bool {
	return rep.CheckID(string(id), expected, observed, holds)
}

// validateClaims checks a scenario's declaration: at least two claims, each
// with a unique non-empty ID, a kind and a text.
func validateClaims(s Scenario) error {
	if len(s.Claims) < 2 {
		return fmt.Errorf("%w: %s states %d claims, want at least 2", ErrInvalid, s.Name, len(s.Claims))
	}
	seen := map[ClaimID]bool{}
	for i, c := range s.Claims {
		switch {
		case c.ID == "" || strings.ContainsAny(string(c.ID), " \t\n"):
			return fmt.Errorf("%w: %s: claim %d has ID %q", ErrInvalid, s.Name, i, c.ID)
		case seen[c.ID]:
			return fmt.Errorf("%w: %s: claim %s declared twice", ErrInvalid, s.Name, c.ID)
		case c.Kind != Safety && c.Kind != Timing:
			return fmt.Errorf("%w: %s: claim %s has kind %q, want safety or timing", ErrInvalid, s.Name, c.ID, c.Kind)
		case strings.TrimSpace(c.Text) == "":
			return fmt.Errorf("%w: %s: claim %s has no text", ErrInvalid, s.Name, c.ID)
		}
		seen[c.ID] = true
	}
	return nil
}

// judgeClaims matches the verdicts of rep with s's declared claims: each
// verdict gets its claim's text and kind; every declared claim must have a
// verdict (one or more) and every verdict a declared claim, or it returns
// *ClaimsError.
func judgeClaims(s Scenario, rep *report.Report) error {
	byID := map[ClaimID]Claim{}
	for _, c := range s.Claims {
		byID[c.ID] = c
	}
	checked := map[ClaimID]bool{}
	cerr := &ClaimsError{Scenario: s.Name}
	for i := range rep.Claims {
		v := &rep.Claims[i]
		c, ok := byID[ClaimID(v.ID)]
		if !ok {
			cerr.Undeclared = append(cerr.Undeclared, ClaimID(v.ID))
			continue
		}
		checked[c.ID] = true
		v.Claim, v.Kind = c.Text, string(c.Kind)
	}
	for _, c := range s.Claims {
		if !checked[c.ID] {
			cerr.Unchecked = append(cerr.Unchecked, c.ID)
		}
	}
	if len(cerr.Unchecked) > 0 || len(cerr.Undeclared) > 0 {
		return cerr
	}
	return nil
}

// SafetyFailed returns the verdicts of rep on safety claims that do not
// hold: what a test must require to be empty. (Report.Failed returns every
// failed verdict, timing ones included.)
func SafetyFailed(rep *report.Report) []report.Claim {
	var out []report.Claim
	for _, c := range rep.Failed() {
		if c.Kind == string(Safety) {
			out = append(out, c)
		}
	}
	return out
}
