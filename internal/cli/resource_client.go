package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/fencing"
)

// The client commands of coordctl resource: put, get, fence and log, and
// the flags and defaults they share.

// ---- clients ----

type resourceClientOptions struct {
	URL     string
	Timeout time.Duration
}

func (o *resourceClientOptions) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.URL, "url", "", "URL of the resource ('resource serve' prints it; default $"+envResourceURL+", else "+defaultResourceURL+")")
	cmd.Flags().DurationVar(&o.Timeout, "command-timeout", defaultCommandTimeout, "time limit of one request to the resource")
}

// client validates --url and returns a client whose requests are bounded by
// --command-timeout, and a function that releases its connections.
func (o *resourceClientOptions) client(f *factory) (*fencing.Client, func(), error) {
	if o.URL == "" {
		o.URL = f.Getenv(envResourceURL)
	}
	if o.URL == "" {
		o.URL = defaultResourceURL
	}
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, nil, usageErrorf("invalid --url %q: want http://host:port", o.URL)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if o.Timeout <= 0 {
		return nil, nil, usageErrorf("invalid --command-timeout %s: must be positive", o.Timeout)
	}
	hc := &http.Client{Transport: tr, Timeout: o.Timeout}
	return &fencing.Client{BaseURL: o.URL, HTTP: hc}, tr.CloseIdleConnections, nil
}

// envScope is the scope a child of `coordctl lock`, `coordctl sem` or
// `coordctl sidecar` finds in its environment: COORD_FENCING_SCOPE (a
// semaphore's NAME#slot, or the lock's name), else the lock or election name.
func envScope(f *factory) string {
	for _, k := range []string{envFencingScope, envLockName, "COORD_ELECTION"} {
		if s := f.Getenv(k); s != "" {
			return s
		}
	}
	return ""
}

func parseTokenFlag(s string) (fencing.Token, error) {
	if s == "" {
		return 0, usageErrorf("--token is required")
	}
	tok, err := fencing.ParseToken(s)
	if err != nil {
		return 0, usageErrorf("invalid --token: %v", err)
	}
	return tok, nil
}

func checkScopeFlag(s string) error {
	if s == "" {
		return usageErrorf("--scope is required (the lock or election name)")
	}
	if err := fencing.ValidateScope(s); err != nil {
		return usageErrorf("invalid --scope: %v", err)
	}
	return nil
}

// ---- put ----

type resourcePutOptions struct {
	resourceClientOptions
	Key            string
	Value          string
	Token          string
	Scope          string
	IfMatch        string
	IdempotencyKey string
}

type resourcePutResult struct{ fencing.PutResult }

func (r resourcePutResult) WriteSimple(w io.Writer) error {
	_, err := fmt.Fprintf(w, "ok key=%s seq=%d version=%d token=%d scope=%s\n", r.Key, r.Seq, r.Version, r.Token, r.Scope)
	return err
}

func newResourcePutCmd(f *factory) *cobra.Command {
	opts := &resourcePutOptions{}
	cmd := &cobra.Command{
		Use:   "put KEY VALUE",
		Short: "Write a value with a fencing token",
		Long: `Write VALUE under KEY in the protected resource, presenting --token for
--scope. A token below the scope's floor is rejected as stale: exit 5. VALUE
'-' reads the value from stdin (at most 1 MiB).

--if-match V writes only if the key's current version is V (0: only if the
key does not exist): optimistic concurrency, the alternative fencing is
compared with. A mismatch exits 1. --idempotency-key K makes a retry safe:
the same key and request are applied once and answered like the first time.`,
		Example: `  coordctl resource put config v1 --token 42 --scope jobs/nightly
  coordctl resource put config v2 --token 42 --scope jobs/nightly --if-match 1
  echo hello | coordctl resource put greeting - --token 42 --scope jobs/nightly --idempotency-key run-7`,
		Args: argsUsage(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Key, opts.Value = args[0], args[1]
			return runResourcePut(cmd.Context(), f, opts)
		},
	}
	opts.addFlags(cmd)
	cmd.Flags().StringVar(&opts.Token, "token", f.Getenv("COORD_FENCING_TOKEN"), "fencing token, a positive integer (default $COORD_FENCING_TOKEN)")
	cmd.Flags().StringVar(&opts.Scope, "scope", envScope(f), "fencing scope: the lock or election name, or a semaphore's NAME#slot (default $COORD_FENCING_SCOPE, $COORD_LOCK_NAME or $COORD_ELECTION)")
	cmd.Flags().StringVar(&opts.IfMatch, "if-match", "", "write only if the key's version is this (0: key must not exist)")
	cmd.Flags().StringVar(&opts.IdempotencyKey, "idempotency-key", "", "apply a retried request once")
	return cmd
}

func runResourcePut(ctx context.Context, f *factory, opts *resourcePutOptions) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	tok, err := parseTokenFlag(opts.Token)
	if err != nil {
		return err
	}
	if err := checkScopeFlag(opts.Scope); err != nil {
		return err
	}
	if opts.Key == "" {
		return usageErrorf("KEY must not be empty")
	}
	var putOpts []fencing.PutOption
	if opts.IfMatch != "" {
		v, err := strconv.ParseUint(opts.IfMatch, 10, 64)
		if err != nil || strings.HasPrefix(opts.IfMatch, "+") {
			return usageErrorf("invalid --if-match %q: want a version number", opts.IfMatch)
		}
		putOpts = append(putOpts, fencing.IfMatch(v))
	}
	if opts.IdempotencyKey != "" {
		putOpts = append(putOpts, fencing.WithIdempotencyKey(opts.IdempotencyKey))
	}
	value := opts.Value
	if value == "-" {
		b, err := io.ReadAll(io.LimitReader(f.IO.In, fencing.MaxValueSize+1))
		if err != nil {
			return fmt.Errorf("read value from stdin: %w", err)
		}
		value = string(b)
	}
	c, release, err := opts.client(f)
	if err != nil {
		return err
	}
	defer release()
	res, err := c.Put(ctx, opts.Key, value, tok, opts.Scope, putOpts...)
	if err != nil {
		return err // fencing.ErrStale: exit 5
	}
	return p.Print(resourcePutResult{res})
}

// ---- get ----

type resourceGetOptions struct {
	resourceClientOptions
	Key string
}

type resourceGetResult struct{ fencing.Entry }

// WriteSimple prints the value alone and exactly, without a newline of
// its own, so that put and get round-trip; -w json has the metadata.
func (r resourceGetResult) WriteSimple(w io.Writer) error {
	_, err := io.WriteString(w, r.Value)
	return err
}

func newResourceGetCmd(f *factory) *cobra.Command {
	opts := &resourceGetOptions{}
	cmd := &cobra.Command{
		Use:   "get KEY",
		Short: "Read a key of the protected resource",
		Long: `Print the value of KEY exactly as it was put: no newline is added, so
'resource get KEY > f' gives back the bytes 'resource put KEY - < f' wrote
(values are UTF-8 text). With -w json it prints the key, value, version and
the token and scope of the write that set it. A key never written exits 1.`,
		Example: `  coordctl resource get config
  coordctl resource get config -w json --url http://127.0.0.1:7070`,
		Args: argsUsage(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Key = args[0]
			return runResourceGet(cmd.Context(), f, opts)
		},
	}
	opts.addFlags(cmd)
	return cmd
}

func runResourceGet(ctx context.Context, f *factory, opts *resourceGetOptions) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	if opts.Key == "" {
		return usageErrorf("KEY must not be empty")
	}
	c, release, err := opts.client(f)
	if err != nil {
		return err
	}
	defer release()
	e, err := c.Get(ctx, opts.Key)
	if err != nil {
		return err // fencing.ErrStale: exit 5
	}
	return p.Print(resourceGetResult{e})
}

// ---- fence ----

type resourceFenceOptions struct {
	resourceClientOptions
	Token string
	Scope string
}

type resourceFenceResult struct{ fencing.FenceResult }

func (r resourceFenceResult) WriteSimple(w io.Writer) error {
	_, err := fmt.Fprintf(w, "ok scope=%s floor=%d\n", r.Scope, r.Floor)
	return err
}

func newResourceFenceCmd(f *factory) *cobra.Command {
	opts := &resourceFenceOptions{}
	cmd := &cobra.Command{
		Use:   "fence",
		Short: "Raise a scope's floor to a token without writing",
		Long: `Raise the floor of --scope to --token, so that from now on the resource
rejects every lower token. A new lock holder fences before it starts work,
closing the window in which its predecessor could still write. A token
below the floor is stale: exit 5.`,
		Example: `  coordctl resource fence --token 57 --scope jobs/nightly`,
		Args:    argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runResourceFence(cmd.Context(), f, opts)
		},
	}
	opts.addFlags(cmd)
	cmd.Flags().StringVar(&opts.Token, "token", f.Getenv("COORD_FENCING_TOKEN"), "fencing token, a positive integer (default $COORD_FENCING_TOKEN)")
	cmd.Flags().StringVar(&opts.Scope, "scope", envScope(f), "fencing scope: the lock or election name, or a semaphore's NAME#slot (default $COORD_FENCING_SCOPE, $COORD_LOCK_NAME or $COORD_ELECTION)")
	return cmd
}

func runResourceFence(ctx context.Context, f *factory, opts *resourceFenceOptions) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	tok, err := parseTokenFlag(opts.Token)
	if err != nil {
		return err
	}
	if err := checkScopeFlag(opts.Scope); err != nil {
		return err
	}
	c, release, err := opts.client(f)
	if err != nil {
		return err
	}
	defer release()
	res, err := c.Fence(ctx, tok, opts.Scope)
	if err != nil {
		return err // fencing.ErrStale: exit 5
	}
	return p.Print(resourceFenceResult{res})
}

// ---- log ----

type resourceLogOptions struct {
	resourceClientOptions
	Scope string
}

type resourceLogResult struct{ fencing.LogResult }

func (r resourceLogResult) WriteSimple(w io.Writer) error {
	for _, wr := range r.Writes {
		if _, err := fmt.Fprintf(w, "seq=%d scope=%s token=%d key=%s version=%d value=%q\n",
			wr.Seq, wr.Scope, wr.Token, wr.Key, wr.Version, wr.Value); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "writes=%d rejected=%d\n", len(r.Writes), r.Rejected)
	return err
}

func newResourceLogCmd(f *factory) *cobra.Command {
	opts := &resourceLogOptions{}
	cmd := &cobra.Command{
		Use:   "log",
		Short: "Print the accepted writes and the count of rejected stale requests",
		Long: `Print the writes the resource accepted, in the order it applied them, for
--scope (every scope if empty), then how many stale requests it rejected.
It is the audit trail: with fencing, the tokens of one scope never go down
from one accepted write to the next. -w json prints one object.`,
		Example: `  coordctl resource log --scope jobs/nightly
  coordctl resource log -w json`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runResourceLog(cmd.Context(), f, opts)
		},
	}
	opts.addFlags(cmd)
	cmd.Flags().StringVar(&opts.Scope, "scope", "", "only this scope (default: every scope)")
	return cmd
}

func runResourceLog(ctx context.Context, f *factory, opts *resourceLogOptions) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	c, release, err := opts.client(f)
	if err != nil {
		return err
	}
	defer release()
	l, err := c.Log(ctx, opts.Scope)
	if err != nil {
		return err // fencing.ErrStale: exit 5
	}
	return p.Print(resourceLogResult{l})
}
