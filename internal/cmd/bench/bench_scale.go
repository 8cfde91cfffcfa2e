package benchcmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/bench/scalebench"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

type benchScaleOptions struct {
	opts scalebench.Options
	sel  scalebench.Selection
	svg  string   // write the charts here
	from []string // read saved -w json results instead of running
}

func newBenchScaleCmd(f *cmdutil.Factory, harness func(context.Context, scalebench.Options) (scalebench.Result, error)) *cobra.Command {
	o := benchScaleOptions{opts: scalebench.DefaultOptions()}
	def := scalebench.DefaultOptions()
	cmd := &cobra.Command{
		Use:   "scale [--quick] [--curves costs,queue,locks,candidates,sessions] [--waiters 1,10,100,1000] [--locks 10,1000,10000] [--shapes 1x500,100x5] [--idle-sessions 10000] [--keepalive both|stream|once] [--members 1,3] [--svg FILE] [--from FILE.json]",
		Short: "How the cost grows with waiters, locks, candidates and sessions",
		Long: `Start an embedded etcd (one member, then three: --members) in a temporary
directory, fsync on unless --unsafe-no-fsync, and measure how the cost grows:

  queue depth       one lock, W waiters (--waiters), each with its own client
                    and session, taking turns: handoff p50/p99 (from the
                    holder's Unlock to the next Lock returning), releases that
                    woke more than one waiter (herd_releases, must be 0),
                    wake-ups per release, etcd watchers, process CPU and RSS,
                    heap and goroutines per waiter; etcd's concurrency.Mutex
                    at the same W in the etcd_concurrency column
  many locks        --workers clients sharing --sessions sessions take and
                    release random names among L (--locks) for --duration:
                    acquisitions/s, Lock p50/p99, keys and leases on the
                    server, watchers, client goroutines per held lock, and
                    keys and leases left once the sessions closed
  many candidates   ExC (--shapes): E elections of C candidates, each its own
                    client, through the election package at TTL --ttl; every
                    leader crashes (stops its keepalives) --crashes times:
                    failover p50/max, keepalives/s on the server (and the
                    model 3N/TTL), watchers, CPU per keepalive, new
                    keepalive streams/s while idle
  idle sessions     N sessions (--idle-sessions) on one client at TTL
                    --idle-ttl, doing nothing but keepalives for
                    --idle-duration after one keepalive interval of start-up:
                    keepalives/s on the server against the model 3N/TTL, CPU
                    per keepalive, keepalive streams the server saw opened,
                    keepalive p50/p99, sessions lost to their local deadline
  costs             a commit, a watch event, a keepalive: the inputs of
                    docs/scale.md's model

The queue and lock curves run on every cluster size of --members; costs,
candidates and idle sessions on the first. --keepalive says how the
candidates' and idle sessions' keepalives are sent: stream (long-lived
streams shared by a client's sessions, what sessions do), once (a
KeepAliveOnce per keepalive, the old path) or both (default: each of those
points twice, the old path in the keepalive_once column, so that the two are
compared within one run). etcd runs in this process: CPU, RSS and heap are
the process's (server and clients together, less the bench's own sampling);
watchers, keys, keepalives and keepalive streams are etcd's own metrics.
A last table judges issues 16's and 20's targets on this run.
--quick runs fewer, smaller points (W 1,10,100; L 10,1000; 1x50, 10x5; N 1000
for 10s) in a few minutes; the full default run takes many.

--svg FILE writes the curves as one SVG image (handoff p50 by W, acquisitions/s
by L, failover by shape). --from A.json,B.json runs nothing: it reads saved
-w json results (rows and notes appended in order; a target measured in a
later file replaces an unmeasured one) and prints or draws them. Results go to stdout, progress to stderr.
-w json prints {"benchmark":"scale","fsync":BOOL,"rows":[{"curve","members",
"point","x","metric","coordkit","etcd_concurrency","keepalive_once"?,"unit"}...],"targets":[{"name",
"measured","target","unit","at_most","met"}...],"notes":[...]}; a value not
measured is null, keepalive_once is present only on the rows it applies to.`,
		Example: `  coordctl bench scale --quick
  coordctl bench scale -w json > scale.json
  coordctl bench scale --from scale.json --svg docs/scale.svg
  coordctl bench scale --waiters 1,100 --locks 10,1000 --shapes 1x100 --members 1
  coordctl bench scale --curves candidates,sessions --shapes 1x500 --idle-sessions 10000 --members 1`,
		Args: cmdutil.ArgsUsage(cobra.NoArgs),
		RunE: cmdutil.SignalRunE(f, func(ctx context.Context, cmd *cobra.Command, _ []string) error {
			o.sel.Given = cmd.Flags().Changed
			opts, err := o.sel.Apply(o.opts)
			if err != nil {
				return cmdutil.UsageErrorf("%v", err)
			}
			o.opts = opts
			return runBenchScale(ctx, f, o, harness)
		}),
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&o.sel.Curves, "curves", scalebench.Curves(), "curves to run")
	fl.BoolVar(&o.sel.Quick, "quick", false, "fewer, smaller points (flags given explicitly still win)")
	fl.IntSliceVar(&o.opts.Waiters, "waiters", def.Waiters, "queue-depth points: waiters on one lock (empty: skip the curve)")
	fl.IntSliceVar(&o.opts.Locks, "locks", def.Locks, "many-locks points: distinct lock names (empty: skip)")
	fl.StringSliceVar(&o.sel.Shapes, "shapes", scalebench.ShapeStrings(def.Shapes), "many-candidates points, ELECTIONSxCANDIDATES (empty: skip)")
	fl.IntSliceVar(&o.opts.Members, "members", def.Members, "etcd cluster sizes to run on (1 and/or 3)")
	fl.IntVar(&o.opts.Handoffs, "handoffs", def.Handoffs, "handoffs measured per implementation and W")
	fl.DurationVar(&o.opts.Hold, "hold", def.Hold, "queue depth: how long a holder keeps the lock once the queue is full")
	fl.DurationVar(&o.opts.Duration, "duration", def.Duration, "length of each many-locks run")
	fl.IntVar(&o.opts.Workers, "workers", def.Workers, "many locks: clients taking locks")
	fl.IntVar(&o.opts.Sessions, "sessions", def.Sessions, "many locks: sessions (and connections) the workers share")
	fl.IntVar(&o.opts.Crashes, "crashes", def.Crashes, "many candidates: leader crashes per shape")
	fl.DurationVar(&o.opts.TTL, "ttl", def.TTL, "many candidates: session TTL")
	fl.IntSliceVar(&o.opts.IdleSessions, "idle-sessions", def.IdleSessions, "idle-sessions points: sessions on one client (empty: skip)")
	fl.DurationVar(&o.opts.IdleTTL, "idle-ttl", def.IdleTTL, "idle sessions: session TTL")
	fl.DurationVar(&o.opts.IdleDuration, "idle-duration", def.IdleDuration, "idle sessions: how long each point is measured")
	fl.StringVar(&o.opts.KeepAlive, "keepalive", def.KeepAlive, "candidates and idle sessions: keepalives on streams shared by a client's sessions (stream), a KeepAliveOnce each (once), or both side by side")
	fl.BoolVar(&o.opts.NoFsync, "unsafe-no-fsync", false, "run etcd without fsync (faster, not what users run)")
	fl.BoolVar(&o.opts.SkipConcurrency, "skip-concurrency", false, "leave etcd's concurrency.Mutex out (its column is then null)")
	fl.StringVar(&o.svg, "svg", "", "also write the curves as an SVG image to this file")
	fl.StringSliceVar(&o.from, "from", nil, "read saved -w json results instead of running, merged in order (with --svg: draw them)")
	return cmd
}

func runBenchScale(ctx context.Context, f *cmdutil.Factory, o benchScaleOptions, harness func(context.Context, scalebench.Options) (scalebench.Result, error)) error {
	var res scalebench.Result
	var err error
	if len(o.from) > 0 {
		if res, err = scalebench.ReadResults(o.from); err != nil {
			return fmt.Errorf("bench scale: %w", err)
		}
	} else {
		o.opts.Progress = f.IO.ErrOut
		if res, err = harness(ctx, o.opts); err != nil {
			return benchError(ctx, "scale", scalebench.ErrOptions, err)
		}
	}
	if o.svg != "" {
		if err := scalebench.WriteSVGFile(o.svg, res); err != nil {
			return fmt.Errorf("bench scale: %w", err)
		}
		fmt.Fprintf(f.IO.ErrOut, "bench scale: wrote %s\n", o.svg)
	}
	return cmdutil.PrintResult(f, res.Printed())
}
