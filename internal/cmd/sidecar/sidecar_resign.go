package sidecarcmd

import (
	"cmp"
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/httpguard"
	"github.com/coordkit/coordkit/internal/sidecar"
)

// envURL names the variable that gives the sidecar's API when --url is not
// given.
const envURL = "COORDCTL_SIDECAR_URL"

// defaultURL is the sidecar's API when neither --url nor envURL is given:
// the default --listen.
const defaultURL = "http://127.0.0.1:4040"

// sidecarResignOptions are coordctl sidecar resign's flags, as given.
type sidecarResignOptions struct {
	URL          string
	APITokenFile string
	Timeout      time.Duration
	// To: hand over to this candidate's id, or best (--to); empty: a
	// plain resignation.
	To string
	// ToSet: --to was given (an empty one is a usage error, not a plain
	// resignation).
	ToSet bool
}

// request checks the flags (usage errors naming the flag) and makes the
// request: --url, else $COORDCTL_SIDECAR_URL, else the default --listen.
func (o sidecarResignOptions) request(getenv func(string) string) (sidecar.ResignRequest, error) {
	r := sidecar.ResignRequest{URL: cmp.Or(o.URL, getenv(envURL), defaultURL), Timeout: o.Timeout, To: o.To}
	if _, err := sidecar.ResignURL(r.URL); err != nil {
		return r, cmdutil.UsageErrorf("invalid --url %q: want http://HOST:PORT", r.URL)
	}
	if r.Timeout <= 0 {
		return r, cmdutil.UsageErrorf("invalid --timeout %s: must be positive", r.Timeout)
	}
	if o.ToSet && strings.TrimSpace(o.To) == "" {
		return r, cmdutil.UsageErrorf("invalid --to %q: want a candidate's --id, or best", o.To)
	}
	if o.APITokenFile != "" {
		var err error
		if r.Token, err = httpguard.ReadTokenFile(o.APITokenFile); err != nil {
			return r, cmdutil.UsageErrorf("invalid --api-token-file: %v", err)
		}
	}
	return r, nil
}

func newSidecarResignCmd(f *cmdutil.Factory) *cobra.Command {
	opts := &sidecarResignOptions{}
	cmd := &cobra.Command{
		Use:   "resign [--to ID|best] [--url URL] [--api-token-file FILE]",
		Short: "Ask a running sidecar to step down (a preStop hook)",
		Long: `Send POST /v1/resign to the sidecar at --url (default $` + envURL + `, else
` + defaultURL + `), with Content-Type application/json and, with
--api-token-file, "Authorization: Bearer TOKEN". A leader stops its command,
steps down and campaigns again at the back of the queue, so a standby takes
over at once instead of a TTL later.

With --to ID or --to best it is a handover (POST /v1/resign?to=…): the
leader hands over to that candidate, or to the one the election's --policy
prefers among the others (best), with no other candidate leading in
between, then stays out of the queue for its --ttl (long enough for the
SIGTERM that follows a preStop hook). In a rolling update with
--policy newest-version this moves leadership once, to a new replica.

Exit 0 when it resigned, and also when there was nothing to do: it did not
lead (what a preStop hook on a standby wants), --to best found no other
candidate, or a foreign candidate (etcdctl elect) blocks the handover (the
leader keeps leading; its SIGTERM resigns plainly). Exit 1 when the sidecar
could not be reached or refused the request (a wrong token, a --to ID that
is not queued).`,
		Example: `  coordctl sidecar resign
  coordctl sidecar resign --to best --url http://127.0.0.1:4040 --api-token-file /etc/coordctl/api-token
  coordctl sidecar resign --to web-2
  coordctl sidecar resign -w json   # {"resigned":true,"state":{...}}`,
		Args: cmdutil.ArgsUsage(cobra.NoArgs),
		RunE: cmdutil.SignalRunE(f, func(ctx context.Context, cmd *cobra.Command, _ []string) error {
			opts.ToSet = cmd.Flags().Changed("to")
			return runSidecarResign(ctx, f, opts)
		}),
	}
	cmd.Flags().StringVar(&opts.URL, "url", "", "the sidecar's API (default $"+envURL+", else "+defaultURL+")")
	cmd.Flags().StringVar(&opts.APITokenFile, "api-token-file", "", "file holding the sidecar's --api-token-file token")
	cmd.Flags().StringVar(&opts.To, "to", "", "hand over to this candidate's --id, or best: the one the election's --policy prefers among the others")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 30*time.Second, "give up after this long (a leader stops its command first, up to its --kill-grace)")
	return cmd
}

func runSidecarResign(ctx context.Context, f *cmdutil.Factory, opts *sidecarResignOptions) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	req, err := opts.request(f.Getenv)
	if err != nil {
		return err
	}
	res, err := sidecar.Resign(ctx, req)
	if err != nil {
		return err
	}
	return p.Print(res)
}
