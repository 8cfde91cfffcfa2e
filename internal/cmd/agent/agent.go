package agentcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/coordapi"
	"github.com/coordkit/coordkit/internal/etcddial"
	"github.com/coordkit/coordkit/internal/httpguard"
	"github.com/coordkit/coordkit/internal/httpserve"
	"github.com/coordkit/coordkit/session"
)

// DefaultListen is where the agent listens unless told otherwise.
const DefaultListen = "127.0.0.1:4050"

type agentOptions struct {
	Listen       string
	TTL          time.Duration
	APITokenFile string
	StartTimeout time.Duration
}

// Listening is what the agent prints once it serves: "ready url=URL
// lease=HEX" ({"event":"listening","url":...,"lease":...} with -w json).
type Listening struct {
	Event string `json:"event"`
	URL   string `json:"url"`
	Lease string `json:"lease"`
}

func (l Listening) String() string { return fmt.Sprintf("ready url=%s lease=%s", l.URL, l.Lease) }

// NewCmd returns the command coordctl agent.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	opts := &agentOptions{}
	cmd := &cobra.Command{
		Use:   "agent [--listen ADDR] [--ttl D] [--api-token-file FILE]",
		Short: "Serve the coordination API: fenced locks, semaphores and elections over HTTP for any language",
		Long: `Serve coordkit's coordination API on --listen, over one etcd session with
lease TTL --ttl. Programs in any language hold locks (exclusive or shared),
semaphore slots and leadership by name through it (clients/python,
clients/node, or curl); see docs/api.md.

A hold is one request whose response is a stream of JSON lines:
  POST /v1/lock               {"name":N,"mode":"exclusive"|"shared","timeout":S|"try":true}
  POST /v1/semaphore          {"name":N,"limit":L,...}
  POST /v1/election/campaign  {"name":N,"id":ID,"timeout":S}
The first line after any "waiting" is "acquired" with the fencing token,
scope, key and lease deadline (or "error" with a code); "held" every second
while held; "lost" with the reason the moment the hold is lost. Closing the
request (or the client dying) releases at once: the next waiter is granted
in about one etcd commit, not after the TTL. A client that vanishes without
closing (its machine died, its network was cut) is released once the
agent's lines to it have gone unacknowledged for --ttl (Linux).
  GET /v1/lock/status?name=N, /v1/semaphore/status?name=N,
      /v1/election/leader?name=N, /v1/election/candidates?name=N,
      /v1/election/observe?name=N (a stream), /v1/session, /v1/openapi.json
  GET /livez: 200 whenever the agent serves, connected to etcd or not;
      open to all, the one request that needs no token (a probe)

Other requests must name a loopback Host, or carry the token of
--api-token-file ("Authorization: Bearer TOKEN"); a non-loopback --listen
requires the token.
The file is read again when it changes (a rotated Kubernetes Secret): its
new token is required from then on, the previous one accepted for 2
minutes more (noted on stderr, without either token). Holds must send
Content-Type: application/json.

It listens before it connects to etcd, and waits for etcd instead of
exiting (in a pod an exit is a CrashLoopBackOff, which brings the agent
back minutes after etcd): while etcd cannot be reached every route answers
503 with code "unavailable" ("connecting to etcd: ..."; the clients raise
CoordError unavailable), attempts are retried with waits capped at 100ms
doubling to 5s, and each failed one is a line on stderr. --start-timeout
bounds the wait (exit 1). An etcd that answers and refuses (TLS,
credentials, another cluster) exits 1 at once: a configuration to fix.

Once connected it prints 'ready url=http://ADDR lease=HEX' (-w json:
{"event":"listening","url":...,"lease":...}). SIGTERM, SIGINT or SIGHUP
release every hold (each stream gets "lost", reason "agent shutting down")
and exit 0. If the agent dies, its holds end when its lease expires, --ttl
later. A hold the agent loses (and why) and a release that failed are also
noted on stderr, one log/slog text line each.`,
		Example: `  coordctl agent
  coordctl agent --listen 127.0.0.1:0 -w json        # port 0: any free port, printed
  coordctl agent --listen :4050 --api-token-file /etc/coordctl/api-token --ttl 5s
  coordctl agent --endpoints etcd-0:2379,etcd-1:2379 --start-timeout 10m   # exit 1 if etcd is not reached in 10 minutes
  curl -N -H 'Content-Type: application/json' -d '{"name":"jobs/nightly","timeout":5}' localhost:4050/v1/lock`,
		Args: cmdutil.ArgsUsage(cobra.NoArgs),
		RunE: cmdutil.SignalRunE(f, func(ctx context.Context, cmd *cobra.Command, args []string) error {
			return runAgent(ctx, f, opts)
		}),
	}
	fl := cmd.Flags()
	f.AddEtcdFlags(fl)
	fl.StringVar(&opts.Listen, "listen", DefaultListen, "HTTP address to serve the API on (port 0: any free port)")
	fl.DurationVar(&opts.TTL, "ttl", session.DefaultTTL, "lease TTL of the agent's session: if the agent dies, its holds end this long after, and a client that vanished without closing loses its holds this long after it went silent (at least 1s)")
	fl.StringVar(&opts.APITokenFile, "api-token-file", "", "file holding the token every request must carry (needed for a non-loopback --listen)")
	fl.DurationVar(&opts.StartTimeout, "start-timeout", 0, "give up (exit 1) when etcd has not been reached this long after start; 0: wait as long as it takes, answering 503 meanwhile")
	return cmd
}

// check validates the flags before anything is dialled; its errors are
// usage errors.
// notify is told when --api-token-file changes (httpguard.ReadSecret).
func (o *agentOptions) check(notify func(string)) (*httpguard.Secret, error) {
	if err := cmdutil.CheckListen("--listen", o.Listen); err != nil {
		return nil, err
	}
	if err := session.CheckTTL(o.TTL); err != nil {
		return nil, cmdutil.UsageErrorf("invalid --ttl: %v", err)
	}
	if o.StartTimeout < 0 {
		return nil, cmdutil.UsageErrorf("invalid --start-timeout %s: must be 0 (wait for etcd as long as it takes) or positive", o.StartTimeout)
	}
	secret := httpguard.NewSecret("")
	if o.APITokenFile != "" {
		var err error
		if secret, err = httpguard.ReadSecret(o.APITokenFile, notify); err != nil {
			return nil, cmdutil.UsageErrorf("invalid --api-token-file: %v", err)
		}
	}
	if err := httpguard.CheckListen(o.Listen, secret.Required()); errors.Is(err, httpguard.ErrTokenRequired) {
		return nil, cmdutil.UsageErrorf("--listen %s is not a loopback address: it needs --api-token-file FILE", o.Listen)
	}
	return secret, nil
}

// runAgent serves the API until ctx ends (exit 0) or the server fails. It
// listens first, answering 503 "connecting to etcd" until it has reached
// etcd and opened its session (etcddial.Connect retries while etcd cannot be
// reached), then says 'ready'.
func runAgent(ctx context.Context, f *cmdutil.Factory, opts *agentOptions) error {
	logger := slog.New(slog.NewTextHandler(f.IO.ErrOut, nil))
	token, err := opts.check(func(msg string) { logger.Info(msg) })
	if err != nil {
		return err
	}
	p, err := f.Printer()
	if err != nil {
		return err
	}
	dial, err := f.EtcdDialer()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", opts.Listen, err)
	}
	var client atomic.Pointer[clientv3.Client]
	api := coordapi.NewLazy(coordapi.Config{Token: token, SessionOptions: []session.Option{session.WithTTL(opts.TTL)},
		RequestTimeout: f.Global.CommandTimeout, Logger: logger}, client.Load)
	// A client that vanished ends like the agent's own session would: about
	// a TTL after it went silent.
	srv := httpserve.Start(ln, withLivez(api), httpserve.PeerTimeout(opts.TTL), httpserve.Logger(logger))
	defer func() {
		if cli := client.Load(); cli != nil {
			cli.Close()
		}
	}()
	// Every return below goes through stop: the holds first (released,
	// their streams told), then the listener, then (deferred) the client.
	stop := func() error {
		err := api.Close()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		return err
	}
	defer f.HoldOutput(p)()

	// One attempt is a dial and the API's session: an etcd that answers the
	// dial and then not the grant is tried again too.
	// A wildcard --listen (":8080") is shown as 127.0.0.1.
	url := httpserve.URL(ln.Addr())
	var opened *coordapi.API // by the attempt that succeeded
	connect := etcddial.Connect{Transient: etcddial.Transient, Timeout: opts.StartTimeout,
		OnRetry: func(r etcddial.Retry) {
			if r.Attempt == 1 { // 'ready' waits for etcd; say where the 503s come from meanwhile
				fmt.Fprintf(f.IO.ErrOut, "coordctl agent: serving %s, every request answered 503 unavailable until etcd is reached\n", url)
			}
			fmt.Fprintf(f.IO.ErrOut, "coordctl agent: %s\n", r)
		},
		Dial: func(ctx context.Context) (*clientv3.Client, error) {
			cli, err := dial(ctx)
			if err != nil {
				return nil, err
			}
			client.Store(cli)
			if opened, err = api.Open(ctx); err != nil {
				client.Store(nil)
				cli.Close()
				return nil, err
			}
			return cli, nil
		}}
	_, err = connect.Start(session.RealClock{}, etcddial.ConnectBackoff()).Run(ctx)
	switch {
	case ctx.Err() != nil:
		return stop()
	case errors.Is(err, etcddial.ErrStartTimeout):
		return errors.Join(fmt.Errorf("--start-timeout %s: %w", opts.StartTimeout, err), stop())
	case err != nil:
		return errors.Join(err, stop())
	}
	if err := p.Print(Listening{Event: "listening", URL: url, Lease: fmt.Sprintf("%x", int64(opened.Lease()))}); err != nil {
		return errors.Join(err, stop())
	}
	select {
	case <-ctx.Done():
		return stop()
	case err := <-srv.Failed():
		return errors.Join(fmt.Errorf("http server: %w", err), stop())
	}
}

// withLivez serves GET /livez beside api: 200 {"status":"ok"} whenever the
// agent serves, connected to etcd or not, without the API's guard (a
// kubelet's probe carries no token and names the pod's address, not a
// loopback Host): a liveness or startup probe that neither restarts an
// agent because etcd is away nor needs the token. It says nothing else.
func withLivez(api http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"ok"}`+"\n")
	})
	mux.Handle("/", api)
	return mux
}
