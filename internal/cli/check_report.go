package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/coordkit/coordkit/internal/safety"
)

// How coordctl check prints a run: one report, or a table row per run and
// a summary; and the command that replays a run.

// checkReport is the result of a check as coordctl prints it.
type checkReport struct {
	safety.Report
	replay   string
	recorded string // the schedule file the replay reads, if written
}

func (r checkReport) MarshalJSON() ([]byte, error) { return json.Marshal(r.Report) }

func (r checkReport) WriteSimple(w io.Writer) error {
	verdict := "PASSED"
	if !r.Passed {
		verdict = "FAILED"
	}
	fencingState := "on"
	if !r.FenceFirst {
		fencingState = "on, but holders do not fence before their first write"
	}
	if !r.Fencing {
		fencingState = "OFF (baseline: the counts below are the finding)"
	}
	var kinds []string
	for k, n := range r.Faults {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(kinds)
	yes := map[bool]string{true: "yes", false: "NO"}
	var b strings.Builder
	if r.Mode == safety.ModeIfMatch {
		fencingState = "OFF, writes conditional on the version read (If-Match)"
	}
	fmt.Fprintf(&b, "%s: %s  (fencing %s, seed %d, %.1fs)\n", r.Check, verdict, fencingState, r.Seed, r.DurationS)
	if r.Lock != "" && (r.Lock != safety.LockCoordkit || (r.Kind != "" && r.Kind != safety.KindMutex) || r.Resource == safety.ResourceSQL) {
		fmt.Fprintf(&b, "  lock:                %s %s (at most %d at once), resource %s\n", r.Lock, r.Kind, r.Limit, r.Resource)
	}
	fmt.Fprintf(&b, "  operations:          %d (%d acquisitions, %d accepted writes, final counter %d)\n", r.Ops, r.Acquisitions, r.Writes, r.FinalValue)
	if r.ReaderAcquisitions > 0 {
		fmt.Fprintf(&b, "  readers:             %d read holdings, at most %d at once\n", r.ReaderAcquisitions, r.MaxReaders)
	}
	fmt.Fprintf(&b, "  faults:              %s\n", strings.Join(kinds, " "))
	if h := r.Handovers; h != nil {
		fmt.Fprintf(&b, "  policy %s:  %d yields to a preferred client, %d resign-to (%d handed over), %d plain resigns\n",
			r.Policy, h.Yields, h.ResignTo, h.HandedOver, h.Resigns)
	}
	fmt.Fprintf(&b, "  stale rejected:      %d\n", r.StaleRejected)
	if r.Mode == safety.ModeIfMatch {
		fmt.Fprintf(&b, "  If-Match refused:    %d\n", r.Conflicts)
	}
	fmt.Fprintf(&b, "  overlapping holders: %d (wrote after a later holder was granted)\n", r.OverlappingHolders)
	fmt.Fprintf(&b, "  lost updates:        %d\n", r.LostUpdates)
	fmt.Fprintf(&b, "  holders in the log:  at most %d live at once\n", r.MaxHolders)
	fmt.Fprintf(&b, "  violations:          %d\n", r.Violations)
	for _, v := range r.Examples {
		fmt.Fprintf(&b, "    %s: %s\n", v.Kind, v.Detail)
	}
	fmt.Fprintf(&b, "  linearizable:        %s\n", yes[r.Linearizable])
	writeEffects(&b, r)
	_, err := io.WriteString(w, b.String())
	return err
}

func replayCommand(o *checkOptions, seed int64) string {
	s := fmt.Sprintf("coordctl check %s-safety --duration %s --clients %d --ttl %s --seed %d", o.Target, o.Duration, o.Clients, o.TTL, seed)
	if o.Kind != "" && o.Kind != "mutex" {
		s += " --kind " + o.Kind
	}
	if o.Kind == "semaphore" {
		s += fmt.Sprintf(" --limit %d", o.Limit)
	}
	if o.Lock == "redsync" {
		s += " --lock redsync --redis " + o.Redis
	}
	if o.Lock == lockPG {
		s += " --lock pg-advisory --dsn DSN"
	}
	if o.Resource == "sql" {
		s += " --resource sql --driver " + o.Driver
		if o.DSN != "" {
			s += " --dsn DSN"
		}
	}
	if o.Policy != "" {
		s += " --policy " + o.Policy
	}
	if o.NoFencing {
		s += " --no-fencing"
	}
	if o.NoFenceFirst {
		s += " --no-fence-first"
	}
	if !o.ProcessClients {
		s += " --process-clients=false"
	}
	return s
}

// checkRow is one run of several, as a table row (-w json: its report).
type checkRow struct{ safety.Report }

func (r checkRow) MarshalJSON() ([]byte, error) { return json.Marshal(r.Report) }

const checkRowFormat = "%-6s %-11s %-9s %-12s %8s %11s %6s %7s %6s %6s %10s  %s\n"

func checkTableHeader() string {
	return fmt.Sprintf(checkRowFormat, "seed", "lock", "kind", "mode", "acquired", "overlapping", "lost", "holders", "faults", "frozen", "violations", "verdict")
}

func (r checkRow) WriteSimple(w io.Writer) error {
	verdict := "passed"
	if !r.Passed {
		verdict = "FAILED"
	}
	kind := string(r.Kind)
	if kind == "semaphore" {
		kind = fmt.Sprintf("sem/%d", r.Limit)
	}
	if kind == "" {
		kind = "election"
	}
	mode := string(r.Mode)
	if r.Resource == safety.ResourceSQL {
		mode += "/sql"
	}
	frozen := r.Faults["freeze-client"] + r.Faults["sigstop-child"]
	_, err := fmt.Fprintf(w, checkRowFormat, strconv.FormatInt(r.Seed, 10), r.Lock, kind, mode,
		strconv.Itoa(r.Acquisitions), strconv.Itoa(r.OverlappingHolders), strconv.Itoa(r.LostUpdates), strconv.Itoa(r.MaxHolders),
		strconv.Itoa(r.FaultTotal()), strconv.Itoa(frozen), strconv.Itoa(r.Violations), verdict)
	return err
}

// checkSummary closes a table of runs.
type checkSummary struct {
	Summary     bool `json:"summary"`
	Runs        int  `json:"runs"`
	Failed      int  `json:"failed"`
	Faults      int  `json:"faults"`
	Effective   int  `json:"effective_faults"`
	Violations  int  `json:"violations"`
	LostUpdates int  `json:"lost_updates"`
	Overlapping int  `json:"overlapping_holders"`
}

func (s checkSummary) WriteSimple(w io.Writer) error {
	_, err := fmt.Fprintf(w, "summary: %d runs, %d failed, %d faults (%d effective), %d violations (%d lost updates, %d overlapping holders in all)\n",
		s.Runs, s.Failed, s.Faults, s.Effective, s.Violations, s.LostUpdates, s.Overlapping)
	return err
}

func (s *checkSummary) add(r safety.Report) {
	s.Runs++
	if !r.Passed {
		s.Failed++
	}
	s.Faults += r.FaultTotal()
	s.Effective += r.EffectiveFaults
	s.Violations += r.Violations
	s.LostUpdates += r.LostUpdates
	s.Overlapping += r.OverlappingHolders
}
