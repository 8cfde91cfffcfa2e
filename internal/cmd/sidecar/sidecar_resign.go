package sidecarcmd

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/sidecar"
)

// sidecarResignOptions are the request the flags make (internal/sidecar).
type sidecarResignOptions = sidecar.ResignRequest

func newSidecarResignCmd(f *cmdutil.Factory) *cobra.Command {
	opts := &sidecarResignOptions{}
	cmd := &cobra.Command{
		Use:   "resign [--url URL] [--api-token-file FILE]",
		Short: "Ask a running sidecar to step down (a preStop hook)",
		Long: `Send POST /v1/resign to the sidecar at --url (default $` + sidecar.EnvURL + `, else
http://127.0.0.1:4040), with Content-Type application/json and, with
--api-token-file, "Authorization: Bearer TOKEN". A leader stops its command,
steps down and campaigns again at the back of the queue, so a standby takes
over at once instead of a TTL later.

Exit 0 when it resigned, and also when it did not lead (nothing to do: what
a preStop hook on a standby wants); exit 1 when the sidecar could not be
reached or refused the request (a wrong token, say).`,
		Example: `  coordctl sidecar resign
  coordctl sidecar resign --url http://127.0.0.1:4040 --api-token-file /etc/coordctl/api-token
  coordctl sidecar resign -w json   # {"resigned":true,"state":{...}}`,
		Args: cmdutil.ArgsUsage(cobra.NoArgs),
		RunE: cmdutil.SignalRunE(f, func(ctx context.Context, _ *cobra.Command, _ []string) error {
			*opts = opts.WithDefaults(f.Getenv)
			return runSidecarResign(ctx, f, opts)
		}),
	}
	cmd.Flags().StringVar(&opts.URL, "url", "", "the sidecar's API (default $"+sidecar.EnvURL+", else http://127.0.0.1:4040)")
	cmd.Flags().StringVar(&opts.APITokenFile, "api-token-file", "", "file holding the sidecar's --api-token-file token")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 30*time.Second, "give up after this long (a leader stops its command first, up to its --kill-grace)")
	return cmd
}

func runSidecarResign(ctx context.Context, f *cmdutil.Factory, opts *sidecarResignOptions) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	res, err := sidecar.Resign(ctx, *opts)
	if err != nil {
		return sidecarFlagError(err)
	}
	return p.Print(res)
}
