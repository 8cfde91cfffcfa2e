package sidecarcmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/internal/childproc"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil/hold"
	"github.com/coordkit/coordkit/internal/coordapi"
	"github.com/coordkit/coordkit/internal/etcddial"
	"github.com/coordkit/coordkit/internal/sidecar"
	"github.com/coordkit/coordkit/session"
)

// NewCmd returns the command coordctl sidecar.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	opts := &sidecarOptions{}
	cmd := &cobra.Command{
		Use:   "sidecar --election NAME --id ID [flags] [-- COMMAND [ARGS...]]",
		Short: "Run beside a replica: leader election with a fencing token over HTTP",
		Long: `Run next to each replica of a service. The sidecars campaign in one etcd
election; exactly one leads at a time and holds a fencing token (the create
revision of its key), which grows with every change of leader.

HTTP API on --listen (port 0 picks a free port):
  GET  /v1/leader   {"name","scope","id","leader","token","is_leader","since"}
  GET  /v1/watch    Server-Sent Events: the current view, then one per change
  GET  /v1/status   the view, both probes' answers and the build (coordctl version)
  POST /v1/resign   step down and campaign again at the back of the queue
                    (Content-Type: application/json; the token of
                    --api-token-file if given, else a loopback Host)
  POST /v1/resign?to=ID|best
                    hand over to that candidate (best: the one --policy
                    prefers among the others), then stay out of the queue
                    for --ttl (a preStop hook's SIGTERM comes meanwhile)
  GET  /v1/candidates  the queue, leader first, with each one's attributes
  GET  /livez       200 while the process serves (a liveness probe that
                    does not depend on etcd)
  GET  /healthz     200 while the session with etcd is alive, else 503
                    (monitoring: "connecting to etcd" at start)
  GET  /readyz      200 only while this instance leads, else 503
  GET  /metrics     Prometheus metrics
With --api, also the coordination API for the application's own locks,
semaphores and elections (POST /v1/lock, /v1/semaphore,
/v1/election/campaign, ...; docs/api.md), each request behind the token of
--api-token-file, or a loopback Host without one.

Once listening it prints 'ready url=http://ADDR' (with -w json:
{"event":"listening","url":...}), then one line per event: elected, lost,
leader (changed).

It listens before it connects to etcd, and waits for etcd instead of
exiting: while etcd cannot be reached it serves (/healthz 503 "connecting
to etcd: ...", no leader known), retries with waits capped at 100ms
doubling to 5s, writes one line per failed attempt on stderr, and
campaigns once connected. --start-timeout bounds the wait (exit 1). An
etcd that answers and refuses (TLS, credentials, another cluster) exits 1
at once: a configuration to fix.

The GET endpoints are open to anyone who can reach --listen (probes and
Prometheus carry no token). POST /v1/resign is not: it wants Content-Type
application/json, and either the token of --api-token-file ("Authorization:
Bearer TOKEN") or, without one, a Host header naming a loopback host, so a
web page in a browser cannot make the sidecar resign. A non-loopback
--listen (":4040" in a pod) needs --api-token-file; the file is read again
when it changes (a rotated Secret: the new token is required, the previous
one accepted for 2 minutes more, a note on stderr). 'coordctl sidecar
resign [--to ID|best]' sends the request (a Kubernetes preStop hook, in
exec form: the image has no shell).

With --token-file the token is written there atomically while this instance
leads and the file is removed on loss, and at start-up, before 'ready' (a
file left by an earlier run is stale). The file's modification time is the
lease's local deadline, moved on after every acknowledged keepalive: trust
the file only while that time is in the future (a sidecar killed whole
removes nothing; its file stops counting before another leader is elected).

With --health-url the leadership is tied to the application's health: the
sidecar asks the URL every --health-interval and, after --health-failures
answers in a row that are not 2xx in time, resigns (a standby takes over at
once) and does not campaign again until an answer is healthy; it does not
campaign before the first healthy answer.

The token file is owned: a sidecar holds
PATH.lock (flock) while it runs, and a second one given the same
--token-file exits 1 instead of deleting the leader's token; the token fences the scope
PREFIX+ELECTION/, where the election's keys live (/v1/leader's "scope").
With a COMMAND after '--', the command
runs only while this instance leads, with COORD_ELECTION, COORD_LEADER_ID,
COORD_FENCING_TOKEN and COORD_FENCING_SCOPE set; on loss its process group gets SIGTERM, then
SIGKILL after --kill-grace or half the margin before the lease's earliest possible
expiry on the server, whichever is first (the command is dead before another instance can
be elected; a --kill-grace given longer than half the lease's margin, a tenth of
--ttl, is warned about: the default applies in full only to stops that are not
losses). If the command exits by itself the sidecar
resigns and exits with its status. Both are checked before 'ready': a
--token-file whose directory does not take a new file exits 2, a command
that is not found or not executable exits 127 or 126.

--policy priority|newest-version|oldest-version makes leadership follow
--priority or --version (default: this binary's version, if it is a
semantic one) instead of arrival; a leader that is not the preferred one
hands over to it (unless --no-preempt), with no other leader in between.
See docs/sidecar.md for a rolling update with a preStop hook.

SIGTERM, SIGINT or SIGHUP stop the command, resign (a standby takes over at once)
and exit 0. A crashed leader is replaced about --ttl after it stopped; a
leader whose keepalives fail turns unready before its lease can expire on
the server. A write error on stdout (a log reader gone) ends nothing: it is
noted once on stderr. See docs/sidecar.md.`,
		Example: `  coordctl sidecar --election my-service --id "$POD_NAME"
  coordctl sidecar --election my-service --id web-1 --listen :4040 --api-token-file /etc/coordctl/api-token --token-file /run/leader/token
  coordctl sidecar --election cron --id node-a --ttl 3s -- ./run-scheduler.sh
  coordctl sidecar --election my-service --id "$POD_NAME" --health-url http://127.0.0.1:8080/healthz   # lead only while the app is healthy
  coordctl sidecar --election my-service --id "$POD_NAME" --policy newest-version --version 2.3.0
  coordctl sidecar --election my-service --id "$POD_NAME" --start-timeout 10m   # exit 1 if etcd is not reached in 10 minutes
  curl -s -X POST -H 'Content-Type: application/json' 'localhost:4040/v1/resign?to=best'
  curl -s localhost:4040/v1/leader   # {"name":"my-service","scope":"my-service/","id":"web-1","leader":"web-2","token":1207,...}`,
		Annotations: map[string]string{cmdutil.ExecAnnotation: "true"},
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && cmd.ArgsLenAtDash() != 0 {
				if cmd.SuggestionsMinimumDistance = 2; len(cmd.SuggestionsFor(args[0])) > 0 {
					return cmdutil.UnknownCommand(cmd, args[0]) // "sidecar resgn": did you mean resign?
				}
				return cmdutil.UsageErrorf("unexpected argument %q: put the command after --", args[0])
			}
			return nil
		},
		RunE: cmdutil.SignalRunE(f, func(ctx context.Context, cmd *cobra.Command, args []string) error {
			opts.Command = args
			opts.KillGraceSet = cmd.Flags().Changed("kill-grace")
			return runSidecar(ctx, f, opts)
		}),
	}
	fl := cmd.Flags()
	f.AddEtcdFlags(fl)
	fl.StringVar(&opts.Election, "election", "", "election name (required); the sidecars of one service share it")
	fl.StringVar(&opts.ID, "id", "", "this instance's identity, e.g. the pod name (required)")
	fl.StringVar(&opts.Prefix, "prefix", "", "namespace the election's keys under this etcd key prefix")
	fl.StringVar(&opts.Listen, "listen", "127.0.0.1:4040", "HTTP address to serve the API on (port 0: any free port)")
	fl.DurationVar(&opts.TTL, "ttl", sidecar.DefaultTTL, "lease TTL: a crashed leader is replaced about this long after it stopped (at least 1s)")
	fl.StringVar(&opts.TokenFile, "token-file", "", "write the fencing token to this file while leading")
	fl.StringVar(&opts.Health.URL, "health-url", "", "the application's health URL: lead only while GET answers 2xx (resign after --health-failures bad answers in a row, campaign again once healthy)")
	fl.DurationVar(&opts.Health.Interval, "health-interval", time.Second, "with --health-url: how often to ask, and the time limit of each answer")
	fl.IntVar(&opts.Health.Failures, "health-failures", 3, "with --health-url: bad answers in a row that make the application unhealthy")
	fl.DurationVar(&opts.KillGrace, "kill-grace", childproc.DefaultKillGrace, "time between SIGTERM and SIGKILL when the command must stop (on loss, at most until the lease's earliest expiry)")
	hold.AddCoordFlags(fl, &opts.Coord, "default: this binary's version, if semantic")
	fl.DurationVar(&opts.StartTimeout, "start-timeout", 0, "give up (exit 1) when etcd has not been reached this long after start; 0: wait as long as it takes, serving the API meanwhile")
	fl.StringVar(&opts.APITokenFile, "api-token-file", "", "file holding the token POST /v1/resign requires (needed for a non-loopback --listen)")
	fl.BoolVar(&opts.CoordAPI, "api", false, "also serve the coordination API (locks, semaphores, elections for the application: docs/api.md) on --listen, behind the token of --api-token-file (else a loopback Host)")
	cmd.AddCommand(newSidecarResignCmd(f))
	return cmd
}

// runSidecar connects to etcd, serves the API and campaigns until ctx ends
// (exit 0) or the command exits (its status).
func runSidecar(ctx context.Context, f *cmdutil.Factory, opts *sidecarOptions) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	if err := opts.Check(); err != nil {
		return err
	}
	if w := opts.GraceWarning(); w != "" && opts.KillGraceSet {
		hold.WarnKillGrace(f.IO.ErrOut, w)
	}
	// Operational notes (a resignation and why, the application's health,
	// a failed campaign or token file write, a hold of --api lost, a
	// rotated --api-token-file) on stderr, as resource serve logs; stdout
	// stays the events.
	logger := slog.New(slog.NewTextHandler(f.IO.ErrOut, nil))
	cfg, err := opts.Configure(func(msg string) { logger.Info(msg) })
	if err != nil {
		return err
	}
	dial, err := f.EtcdDialer()
	if err != nil {
		return err
	}
	defer f.HoldOutput(p)()

	// No dial here: the sidecar connects once it serves, and retries
	// while etcd is unreachable (an exit would be a CrashLoopBackOff).
	cfg.Connect.Dial, cfg.Connect.Transient = dial, etcddial.Transient
	cfg.Connect.OnRetry = func(r etcddial.Retry) { fmt.Fprintf(f.IO.ErrOut, "coordctl sidecar: %s\n", r) }
	var sc *sidecar.Sidecar
	if opts.CoordAPI {
		// The API opens on the sidecar's client once it has reached etcd
		// (before that its routes answer 503 unavailable); the sidecar's
		// CloseAPI closes it.
		cfg.Mount = coordapi.NewLazy(coordapi.Config{Token: cfg.APIToken,
			SessionOptions: []session.Option{session.WithTTL(opts.TTL)}, RequestTimeout: f.Global.CommandTimeout, Logger: logger},
			func() *clientv3.Client { return sc.Client() })
	}
	reg := sidecar.NewRegistry()
	cfg.Stdout, cfg.Stderr, cfg.Watchdog = f.IO.Out, f.IO.ErrOut, f.Watchdog
	cfg.Logger = logger
	cfg.RequestTimeout = f.Global.CommandTimeout
	cfg.Registerer, cfg.Gatherer, cfg.OnChange = reg, reg, sidecar.OutputLines(p.Print, f.IO.ErrOut)
	sc, err = sidecar.New(cfg)
	if err != nil {
		return err
	}
	err = sidecar.Serve(ctx, sc, opts.Listen, func(url string) error { return p.Print(sidecar.NewListening(url)) })
	var ce *sidecar.ChildExitError
	switch {
	case errors.As(err, &ce):
		return &cmdutil.ChildExitError{Code: ce.Code}
	case errors.Is(err, etcddial.ErrStartTimeout):
		return fmt.Errorf("--start-timeout %s: %w", opts.StartTimeout, err)
	}
	return err
}
