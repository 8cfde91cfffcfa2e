package etcdcmd

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/etcdembed"
	"github.com/coordkit/coordkit/internal/faultctl"
)

type etcdOptions struct {
	DataDir    string
	ClientURLs string
	PeerURLs   string
	Name       string
	Members    int
	Control    string
}

// etcdReady is what `coordctl etcd` prints once etcd serves: the client
// URLs and, with --members 3, the control API.
type etcdReady struct {
	Endpoints []string `json:"endpoints"`
	Control   string   `json:"control,omitempty"`
}

func (r etcdReady) WriteSimple(w io.Writer) error {
	_, err := fmt.Fprintf(w, "ready endpoints=%s\n", strings.Join(r.Endpoints, ","))
	return err
}

// NewCmd returns the command coordctl etcd.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	opts := &etcdOptions{}
	cmd := &cobra.Command{
		Use:   "etcd",
		Short: "Run an embedded single-member etcd in the foreground",
		Long: `Run a real etcd server (the etcd server code, embedded) as one member in the
foreground. Once it serves clients it prints one line, 'ready endpoints=URL'
(with -w json: {"endpoints":[URL]}). SIGINT or SIGTERM stop it cleanly; its
data stays in --data-dir for the next start.`,
		Example: `  coordctl etcd
  coordctl etcd --data-dir /tmp/etcd1 --listen-client-urls http://127.0.0.1:23790 --listen-peer-urls http://127.0.0.1:23800
  coordctl etcd -w json   # {"endpoints":["http://127.0.0.1:2379"]}
  coordctl etcd --members 3 --control 127.0.0.1:2399   # three members behind fault proxies`,
		Args: cmdutil.ArgsUsage(cobra.NoArgs),
		RunE: cmdutil.SignalRunE(f, func(ctx context.Context, _ *cobra.Command, _ []string) error { return runEtcd(ctx, f, opts) }),
	}
	cmd.Flags().StringVar(&opts.DataDir, "data-dir", "coordctl.etcd", "directory of the member's data")
	cmd.Flags().StringVar(&opts.ClientURLs, "listen-client-urls", "http://127.0.0.1:2379", "URL to serve clients on")
	cmd.Flags().StringVar(&opts.PeerURLs, "listen-peer-urls", "http://127.0.0.1:2380", "URL to serve peers on")
	cmd.Flags().StringVar(&opts.Name, "name", "default", "member name")
	cmd.Flags().IntVar(&opts.Members, "members", 1, "1, or 3 for a three-member cluster in this process with fault proxies and a control API (see docs/safety.md)")
	cmd.Flags().StringVar(&opts.Control, "control", "127.0.0.1:2399", "with --members 3: address of the fault-control HTTP API")
	return cmd
}

// runEtcd serves until ctx is cancelled or the server fails: one member
// (etcdembed.Run), or three with fault proxies and the control API
// (faultctl.RunCluster).
func runEtcd(ctx context.Context, f *cmdutil.Factory, opts *etcdOptions) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	if opts.DataDir == "" {
		return cmdutil.UsageErrorf("--data-dir must not be empty")
	}
	served := false
	ready := func(r etcdReady) error { served = true; return p.Print(r) }
	switch opts.Members {
	case 1:
		if err := checkMemberURL("--listen-client-urls", opts.ClientURLs); err != nil {
			return err
		}
		if err := checkMemberURL("--listen-peer-urls", opts.PeerURLs); err != nil {
			return err
		}
		cfg := etcdembed.Config{Name: opts.Name, DataDir: opts.DataDir, ClientURL: opts.ClientURLs, PeerURL: opts.PeerURLs}
		err = etcdembed.Run(ctx, cfg, func(eps []string) error { return ready(etcdReady{Endpoints: eps}) })
	case 3:
		if err := cmdutil.CheckListen("--control", opts.Control); err != nil {
			return err
		}
		var urls []string
		for _, u := range strings.Split(opts.ClientURLs, ",") {
			if u = strings.TrimSpace(u); u != "" {
				if err := checkMemberURL("--listen-client-urls", u); err != nil {
					return err
				}
				urls = append(urls, u)
			}
		}
		cfg := etcdembed.ClusterConfig{Size: opts.Members, DataDir: opts.DataDir, ClientURLs: urls}
		err = faultctl.RunCluster(ctx, cfg, opts.Control, func(eps []string, control string) error {
			fmt.Fprintf(f.IO.ErrOut, "coordctl etcd: fault control API on %s (GET /v1/status)\n", control)
			return ready(etcdReady{Endpoints: eps, Control: control})
		})
	default:
		return cmdutil.UsageErrorf("invalid --members %d: want 1 or 3", opts.Members)
	}
	if err == nil && served && ctx.Err() != nil {
		fmt.Fprintln(f.IO.ErrOut, "coordctl etcd: stopping")
	}
	return err
}

// checkMemberURL reports a usage error for a URL an etcd member cannot
// listen on: it must be http://host:port with a port in 0-65535.
func checkMemberURL(flag, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return cmdutil.UsageErrorf("invalid %s %q: want http://host:port", flag, raw)
	}
	return cmdutil.CheckListen(flag, u.Host)
}
