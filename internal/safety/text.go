package safety

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// How coordctl check prints a run: one Verdict, or a Row per run and a
// Summary; and the command that replays a run. Each has a readable form
// (WriteSimple) and JSON, the stable contract.

// Verdict is a run's report as printed, with the command that replays it
// and the schedule file that command reads, if one was recorded.
type Verdict struct {
	Report
	Replay   string `json:"-"`
	Recorded string `json:"-"`
}

// NewVerdict is rep, a run of the suite whose Base is base, with its
// replay command; when the run failed (Report.Failed) or record is given,
// its schedule is recorded (RecordSchedule) and the command replays it.
func NewVerdict(base Config, rep Report, record string) (Verdict, error) {
	v := Verdict{Report: rep, Replay: ReplayCommand(base, rep.Seed)}
	if rep.Failed() || record != "" {
		path, err := RecordSchedule(record, base.Target, rep.Seed, rep.Schedule)
		if err != nil {
			return v, err
		}
		v.Replay += " --schedule " + path
		v.Recorded = path
	}
	return v, nil
}

// MarshalJSON is the report's JSON.
func (v Verdict) MarshalJSON() ([]byte, error) { return json.Marshal(v.Report) }

// WriteSimple writes the report as coordctl check prints one run.
func (v Verdict) WriteSimple(w io.Writer) error {
	r := v.Report
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
	if r.Mode == ModeIfMatch {
		fencingState = "OFF, writes conditional on the version read (If-Match)"
	}
	var kinds []string
	for k, n := range r.Faults {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(kinds)
	yes := map[bool]string{true: "yes", false: "NO"}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s  (fencing %s, seed %d, %.1fs)\n", r.Check, verdict, fencingState, r.Seed, r.DurationS)
	if r.Lock != "" && (r.Lock != LockCoordkit || (r.Kind != "" && r.Kind != KindMutex) || r.Resource == ResourceSQL) {
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
	if r.Mode == ModeIfMatch {
		fmt.Fprintf(&b, "  If-Match refused:    %d\n", r.Conflicts)
	}
	fmt.Fprintf(&b, "  overlapping holders: %d (wrote after a later holder was granted)\n", r.OverlappingHolders)
	fmt.Fprintf(&b, "  lost updates:        %d\n", r.LostUpdates)
	fmt.Fprintf(&b, "  holders in the log:  at most %d live at once\n", r.MaxHolders)
	fmt.Fprintf(&b, "  violations:          %d\n", r.Violations)
	for _, x := range r.Examples {
		fmt.Fprintf(&b, "    %s: %s\n", x.Kind, x.Detail)
	}
	fmt.Fprintf(&b, "  linearizable:        %s\n", yes[r.Linearizable])
	if len(r.Effects) > 0 {
		fmt.Fprintf(&b, "  effective faults:    %d of %d applied (a freeze whose holder was superseded and wrote late; a cluster fault during which a client operation failed)\n", r.EffectiveFaults, len(r.Effects))
		for _, e := range r.Effects {
			mark := " "
			if e.Effective {
				mark = "*"
			}
			fmt.Fprintf(&b, "   %s %2d %-15s %6.1fs  %s\n", mark, e.Step, e.Kind, e.AtS, e.What)
		}
	}
	fmt.Fprintf(&b, "replay: %s\n", v.Replay)
	if v.Recorded != "" {
		fmt.Fprintf(&b, "  (the same faults at the same offsets; %s)\n", NotReplayed)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ReplayCommand is the coordctl command that runs base again with seed:
// the flags that describe base, as coordctl check spells them.
func ReplayCommand(base Config, seed int64) string {
	s := fmt.Sprintf("coordctl check %s-safety --duration %s --clients %d --ttl %s --seed %d", base.Target, base.Duration, base.Clients, base.TTL, seed)
	if base.Kind != "" && base.Kind != KindMutex {
		s += " --kind " + string(base.Kind)
	}
	if base.Kind == KindSemaphore {
		s += fmt.Sprintf(" --limit %d", base.Limit)
	}
	switch base.lock() {
	case LockRedsync:
		s += " --lock redsync --redis " + base.RedisAddr
	case LockPGAdvisory:
		s += " --lock pg-advisory --dsn DSN"
	}
	if base.Resource == ResourceSQL {
		s += " --resource sql --driver " + base.SQLDriver
		if base.SQLDSN != "" {
			s += " --dsn DSN"
		}
	}
	if base.Policy != "" {
		s += " --policy " + string(base.Policy)
	}
	if !base.Fencing {
		s += " --no-fencing"
	}
	if base.NoFenceFirst {
		s += " --no-fence-first"
	}
	if base.Coordctl == "" {
		s += " --process-clients=false"
	}
	if base.Python != "" {
		s += " --python-clients --python " + base.Python
	}
	return s
}

// Row is one run of several, as a table row (JSON: its report).
type Row struct{ Report }

// MarshalJSON is the report's JSON.
func (r Row) MarshalJSON() ([]byte, error) { return json.Marshal(r.Report) }

const rowFormat = "%-6s %-11s %-9s %-12s %8s %11s %6s %7s %6s %6s %10s  %s\n"

// TableHeader is the header line of a table of Rows.
func TableHeader() string {
	return fmt.Sprintf(rowFormat, "seed", "lock", "kind", "mode", "acquired", "overlapping", "lost", "holders", "faults", "frozen", "violations", "verdict")
}

// WriteSimple writes the row under TableHeader.
func (r Row) WriteSimple(w io.Writer) error {
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
	if r.Resource == ResourceSQL {
		mode += "/sql"
	}
	frozen := r.Faults["freeze-client"] + r.Faults["sigstop-child"]
	_, err := fmt.Fprintf(w, rowFormat, strconv.FormatInt(r.Seed, 10), r.Lock, kind, mode,
		strconv.Itoa(r.Acquisitions), strconv.Itoa(r.OverlappingHolders), strconv.Itoa(r.LostUpdates), strconv.Itoa(r.MaxHolders),
		strconv.Itoa(r.FaultTotal()), strconv.Itoa(frozen), strconv.Itoa(r.Violations), verdict)
	return err
}

// Summary closes a table of runs (JSON: one object with "summary": true).
type Summary struct {
	Summary     bool `json:"summary"`
	Runs        int  `json:"runs"`
	Failed      int  `json:"failed"`
	Faults      int  `json:"faults"`
	Effective   int  `json:"effective_faults"`
	Violations  int  `json:"violations"`
	LostUpdates int  `json:"lost_updates"`
	Overlapping int  `json:"overlapping_holders"`
}

// WriteSimple writes the summary line.
func (s Summary) WriteSimple(w io.Writer) error {
	_, err := fmt.Fprintf(w, "summary: %d runs, %d failed, %d faults (%d effective), %d violations (%d lost updates, %d overlapping holders in all)\n",
		s.Runs, s.Failed, s.Faults, s.Effective, s.Violations, s.LostUpdates, s.Overlapping)
	return err
}

// Add counts one run.
func (s *Summary) Add(r Report) {
	s.Summary = true
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
