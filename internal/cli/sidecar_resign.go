package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/httpguard"
	"github.com/coordkit/coordkit/internal/sidecar"
)

// envSidecarURL is the sidecar API address 'sidecar resign' uses by default.
const envSidecarURL = "COORDCTL_SIDECAR_URL"

// sidecarAPIToken reads --api-token-file and checks that a non-loopback
// --listen has a token: POST /v1/resign must not be open to the network.
func sidecarAPIToken(listen, file string) (string, error) {
	token := ""
	if file != "" {
		var err error
		token, err = httpguard.ReadTokenFile(file)
		if err != nil {
			return "", usageErrorf("invalid --api-token-file: %v", err)
		}
	}
	if err := httpguard.CheckListen(listen, token); errors.Is(err, httpguard.ErrTokenRequired) {
		return "", usageErrorf("--listen %s is not a loopback address: it needs --api-token-file FILE "+
			"(POST /v1/resign then requires that token; the GET endpoints stay open)", listen)
	} else if err != nil {
		return "", usageErrorf("invalid --listen %q: %v", listen, err)
	}
	return token, nil
}

type sidecarResignOptions struct {
	URL          string
	APITokenFile string
	Timeout      time.Duration
}

// sidecarResignResult is what 'sidecar resign' prints.
type sidecarResignResult struct {
	Resigned bool         `json:"resigned"`
	Reason   string       `json:"reason,omitempty"`
	View     sidecar.View `json:"state"`
}

func (r sidecarResignResult) WriteSimple(w io.Writer) error {
	if r.Resigned {
		_, err := fmt.Fprintf(w, "resigned id=%s\n", r.View.ID)
		return err
	}
	_, err := fmt.Fprintf(w, "not resigned id=%s: %s\n", r.View.ID, r.Reason)
	return err
}

func newSidecarResignCmd(f *factory) *cobra.Command {
	opts := &sidecarResignOptions{}
	cmd := &cobra.Command{
		Use:   "resign [--url URL] [--api-token-file FILE]",
		Short: "Ask a running sidecar to step down (a preStop hook)",
		Long: `Send POST /v1/resign to the sidecar at --url (default $` + envSidecarURL + `, else
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
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.URL == "" {
				opts.URL = f.Getenv(envSidecarURL)
			}
			if opts.URL == "" {
				opts.URL = "http://127.0.0.1:4040"
			}
			ctx, cancel := f.NotifyContext(cmd.Context())
			defer cancel()
			return runSidecarResign(ctx, f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.URL, "url", "", "the sidecar's API (default $"+envSidecarURL+", else http://127.0.0.1:4040)")
	cmd.Flags().StringVar(&opts.APITokenFile, "api-token-file", "", "file holding the sidecar's --api-token-file token")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 30*time.Second, "give up after this long (a leader stops its command first, up to its --kill-grace)")
	return cmd
}

func runSidecarResign(ctx context.Context, f *factory, opts *sidecarResignOptions) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageErrorf("invalid --url %q: want http://HOST:PORT", opts.URL)
	}
	if opts.Timeout <= 0 {
		return usageErrorf("invalid --timeout %s: must be positive", opts.Timeout)
	}
	token := ""
	if opts.APITokenFile != "" {
		if token, err = httpguard.ReadTokenFile(opts.APITokenFile); err != nil {
			return usageErrorf("invalid --api-token-file: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	endpoint := strings.TrimSuffix(u.String(), "/") + "/v1/resign"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader([]byte("{}")))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("sidecar resign: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("sidecar resign: %s: %w", endpoint, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
		var v sidecar.View
		if err := json.Unmarshal(body, &v); err != nil {
			return fmt.Errorf("sidecar resign: %s answered %q: %w", endpoint, body, err)
		}
		return p.Print(sidecarResignResult{Resigned: true, View: v})
	case http.StatusConflict:
		var e struct {
			Error string       `json:"error"`
			View  sidecar.View `json:"state"`
		}
		if err := json.Unmarshal(body, &e); err != nil {
			return fmt.Errorf("sidecar resign: %s answered %q: %w", endpoint, body, err)
		}
		return p.Print(sidecarResignResult{Reason: e.Error, View: e.View})
	default:
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(body, &e)
		if e.Error == "" {
			e.Error = strings.TrimSpace(string(body))
		}
		return fmt.Errorf("sidecar resign: %s answered %s: %s", endpoint, resp.Status, e.Error)
	}
}
