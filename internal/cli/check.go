package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/safety"
)

// errCheckFailed: the check ran and found a violation; its report says which.
var errCheckFailed = fmt.Errorf("check failed: %w", errFailed)

func newCheckCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Jepsen-style safety checks of fenced locks and elections on a real etcd cluster",
		Long: `Run a safety check against a real three-member etcd cluster (embedded, every
link behind a fault-injecting proxy) while a seeded nemesis injects faults:
isolating a member or the current leader, cutting clients off a member,
stopping and restarting a member, freezing a lock holder past its TTL
(in process, and with SIGSTOP of a real 'coordctl lock' or 'coordctl
sidecar' process and the command it runs).

Clients contend for one lock (or one election) and, while they hold it,
increment a counter in the protected resource with a read-modify-write
carrying their fencing token. A checker then reads the resource's log and
the clients' history. See docs/safety.md.`,
		Example: `  coordctl check lock-safety --duration 60s --seed 7
  coordctl check lock-safety --no-fencing --duration 30s -w json
  coordctl check election-safety --duration 60s`,
		Args: argsUsage(cobra.NoArgs),
	}
	cmd.AddCommand(newCheckSafetyCmd(f, safety.TargetLock), newCheckSafetyCmd(f, safety.TargetElection), newCheckRMWCmd(f))
	return cmd
}

type checkOptions struct {
	Target         safety.Target
	Duration       time.Duration
	Clients        int
	TTL            time.Duration
	Seed           int64
	NoFencing      bool
	NoFenceFirst   bool
	DataDir        string
	ProcessClients bool
	History        string
	seedSet        bool
}

func newCheckSafetyCmd(f *factory, target safety.Target) *cobra.Command {
	opts := &checkOptions{Target: target}
	what := map[safety.Target]string{safety.TargetLock: "lock", safety.TargetElection: "leader election"}[target]
	cmd := &cobra.Command{
		Use:   string(target) + "-safety",
		Short: "Check that a fenced " + what + " protects the resource under faults",
		Long: fmt.Sprintf(`Start a three-member etcd cluster with fault proxies and a protected resource,
run --clients clients that contend for one %[1]s and, while they hold it, increment
a counter in the resource (read, then write the value + 1 with their fencing
token), and let a seeded nemesis inject faults for --duration. Then check:

  - no write was accepted from a holder after a later holder's token was
    admitted (by a write or a fence);
  - no counter update was lost (accepted writes = final counter value);
  - the history of reads, writes and fences is linearizable (porcupine).

Each holder fences (POST /v1/fence) before its first read: that closes the
window in which its predecessor could still write. --no-fence-first leaves
the fence out, to show that window: with fencing on, a paused predecessor's
write can then still land between the new holder's read and its write.

With --no-fencing the same workload and schedule run against a resource that
does not check tokens; the run passes when it completes, and its counts of
overlapping holders and lost updates are the finding.

Output: a summary with the command that replays the schedule (-w json: one
object). Exit 0 when passed, 1 when a violation was found. Progress goes to
stderr.`, what),
		Example: fmt.Sprintf(`  coordctl check %[1]s-safety --duration 60s --seed 7
  coordctl check %[1]s-safety --no-fencing --duration 20s -w json`, target),
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.seedSet = cmd.Flags().Changed("seed")
			ctx, cancel := f.NotifyContext(cmd.Context())
			defer cancel()
			return runCheckSafety(ctx, f, opts)
		},
	}
	fl := cmd.Flags()
	fl.DurationVar(&opts.Duration, "duration", 60*time.Second, "how long the clients and the nemesis run")
	fl.IntVar(&opts.Clients, "clients", 5, "number of in-process clients (at least 2)")
	fl.DurationVar(&opts.TTL, "ttl", 2*time.Second, "lease TTL of each client (at least 1s)")
	fl.Int64Var(&opts.Seed, "seed", 0, "seed of the fault schedule (default: from the clock; printed for replay)")
	fl.BoolVar(&opts.NoFencing, "no-fencing", false, "run against a resource that does not check tokens (the baseline)")
	fl.BoolVar(&opts.NoFenceFirst, "no-fence-first", false, "holders skip the fence before their first read (shows the window it closes)")
	fl.StringVar(&opts.DataDir, "data-dir", "", "directory for the cluster and resource data; must be empty or absent (default: a temporary directory, removed after)")
	fl.BoolVar(&opts.ProcessClients, "process-clients", true,
		"also run 'coordctl lock|sidecar ... -- coordctl check rmw' processes, which the nemesis SIGSTOPs")
	fl.StringVar(&opts.History, "history", "", "write the recorded history (ops and the resource's log) as JSON to this file")
	return cmd
}

func (o *checkOptions) validate() error {
	switch {
	case o.Duration < 5*time.Second:
		return usageErrorf("invalid --duration %s: must be at least 5s", o.Duration)
	case o.Clients < 2 || o.Clients > 50:
		return usageErrorf("invalid --clients %d: want 2..50", o.Clients)
	case o.TTL < time.Second:
		return usageErrorf("invalid --ttl %s: must be at least 1s", o.TTL)
	}
	return nil
}

// checkReport is the result of a check as coordctl prints it.
type checkReport struct {
	safety.Report
	replay string
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
	fmt.Fprintf(&b, "%s: %s  (fencing %s, seed %d, %.1fs)\n", r.Check, verdict, fencingState, r.Seed, r.DurationS)
	fmt.Fprintf(&b, "  operations:          %d (%d acquisitions, %d accepted writes, final counter %d)\n", r.Ops, r.Acquisitions, r.Writes, r.FinalValue)
	fmt.Fprintf(&b, "  faults:              %s\n", strings.Join(kinds, " "))
	fmt.Fprintf(&b, "  stale rejected:      %d\n", r.StaleRejected)
	fmt.Fprintf(&b, "  overlapping holders: %d (wrote after a later holder was granted)\n", r.OverlappingHolders)
	fmt.Fprintf(&b, "  lost updates:        %d\n", r.LostUpdates)
	fmt.Fprintf(&b, "  violations:          %d\n", r.Violations)
	for _, v := range r.Examples {
		fmt.Fprintf(&b, "    %s: %s\n", v.Kind, v.Detail)
	}
	fmt.Fprintf(&b, "  linearizable:        %s\n", yes[r.Linearizable])
	fmt.Fprintf(&b, "replay: %s\n", r.replay)
	_, err := io.WriteString(w, b.String())
	return err
}

func replayCommand(o *checkOptions, seed int64) string {
	s := fmt.Sprintf("coordctl check %s-safety --duration %s --clients %d --ttl %s --seed %d", o.Target, o.Duration, o.Clients, o.TTL, seed)
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

func runCheckSafety(ctx context.Context, f *factory, opts *checkOptions) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	if err := opts.validate(); err != nil {
		return err
	}
	seed := opts.Seed
	if !opts.seedSet {
		seed = time.Now().UnixNano() % 1_000_000
	}
	dir := opts.DataDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "coordctl-check-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	} else if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return usageErrorf("--data-dir %s is not empty: the check needs a fresh cluster", dir)
	}
	cfg := safety.Config{
		Target: opts.Target, Duration: opts.Duration, Clients: opts.Clients, TTL: opts.TTL,
		Seed: seed, Fencing: !opts.NoFencing, NoFenceFirst: opts.NoFenceFirst, DataDir: dir, Progress: f.IO.ErrOut,
	}
	if opts.ProcessClients {
		exe, err := f.Executable()
		if err != nil {
			return fmt.Errorf("find coordctl for the process clients: %w", err)
		}
		cfg.Coordctl = exe
	}
	fmt.Fprintf(f.IO.ErrOut, "starting a three-member etcd cluster and the resource (fencing %t, seed %d)...\n", cfg.Fencing, seed)
	rep, h, err := safety.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return mark(errFailed, errors.New("check interrupted"))
	}
	if opts.History != "" {
		b, err := json.Marshal(h)
		if err == nil {
			err = os.WriteFile(opts.History, b, 0o644)
		}
		if err != nil {
			return fmt.Errorf("write --history: %w", err)
		}
	}
	if err := p.Print(checkReport{Report: rep, replay: replayCommand(opts, seed)}); err != nil {
		return err
	}
	if !rep.Passed {
		return reported(errCheckFailed)
	}
	return nil
}

// ---- rmw: the command the process clients run under `coordctl lock` ----

type rmwOptions struct {
	URL   string
	Key   string
	ID    string
	Work  time.Duration
	Fence bool
}

func newCheckRMWCmd(f *factory) *cobra.Command {
	opts := &rmwOptions{}
	cmd := &cobra.Command{
		Use:    "rmw --url URL --key KEY --id ID",
		Short:  "One fenced read-modify-write of a counter (run by lock-safety under 'coordctl lock')",
		Hidden: true,
		Long: `Fence with $COORD_FENCING_TOKEN, read the counter KEY, wait --work, write the
value + 1 tagged with ID.TOKEN; print what happened as one JSON line. Exit 5 if the
write was rejected as stale, 1 on other errors.`,
		Example: `  coordctl lock safety -- coordctl check rmw --url http://127.0.0.1:7070 --key counter --id x-1`,
		Args:    argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCheckRMW(cmd.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.URL, "url", "", "URL of the protected resource")
	fl.StringVar(&opts.Key, "key", "counter", "the counter's key")
	fl.StringVar(&opts.ID, "id", "", "id stored with the write")
	fl.DurationVar(&opts.Work, "work", 0, "time between the read and the write")
	fl.BoolVar(&opts.Fence, "fence", true, "fence before reading")
	return cmd
}

type rmwResult safety.RMWResult

func (r rmwResult) WriteSimple(w io.Writer) error {
	_, err := fmt.Fprintf(w, "id=%s token=%d fence=%s read=%d wrote=%d write=%s %s\n", r.ID, r.Token, r.Fence, r.Read, r.Wrote, r.Write, r.Message)
	return err
}

func rmwOutcome(err error) safety.Outcome {
	var api *fencing.APIError
	switch {
	case err == nil:
		return safety.OK
	case errors.Is(err, fencing.ErrStale):
		return safety.Stale
	case errors.As(err, &api):
		return safety.Fail
	}
	return safety.Unknown
}

func runCheckRMW(ctx context.Context, f *factory, opts *rmwOptions) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	if opts.URL == "" || opts.ID == "" {
		return usageErrorf("--url and --id are required")
	}
	tok, err := parseTokenFlag(f.Getenv(envFencingToken))
	if err != nil {
		return usageErrorf("$%s: %v", envFencingToken, err)
	}
	scope := envScope(f)
	if err := checkScopeFlag(scope); err != nil {
		return err
	}
	hc := &http.Client{Timeout: f.Global.CommandTimeout}
	defer hc.CloseIdleConnections()
	fc := fencing.Client{BaseURL: opts.URL, HTTP: hc}
	// The id names the tenure: a sidecar runs its command again, with the
	// same arguments, each time it is elected.
	res := rmwResult{ID: fmt.Sprintf("%s.%d", opts.ID, tok), Token: uint64(tok)}
	finish := func(err error) error {
		if err != nil {
			res.Message = err.Error()
		}
		if perr := p.Print(res); perr != nil {
			return perr
		}
		switch {
		case err == nil:
			return nil
		case errors.Is(err, fencing.ErrStale):
			return reported(err)
		}
		return reported(mark(errFailed, err))
	}
	if opts.Fence {
		_, err := fc.Fence(ctx, tok, scope)
		if res.Fence = rmwOutcome(err); err != nil {
			return finish(err)
		}
	}
	e, err := fc.Get(ctx, opts.Key)
	switch {
	case err == nil:
		if res.Read, _, err = safety.ParseValue(e.Value); err != nil {
			return finish(err)
		}
	case errors.Is(err, fencing.ErrNotFound):
	default:
		return finish(err)
	}
	res.ReadOK = true
	if opts.Work > 0 {
		select {
		case <-time.After(opts.Work):
		case <-ctx.Done():
			return finish(ctx.Err())
		}
	}
	res.Wrote = res.Read + 1
	_, err = fc.Put(ctx, opts.Key, safety.FormatValue(res.Wrote, res.ID), tok, scope)
	res.Write = rmwOutcome(err)
	return finish(err)
}
