package resource

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

// The client commands of coordctl resource: put, get, fence, log and
// floors, and the flags and defaults they share.

// resourceOptions are the flags of the client commands; each binds its own.
type resourceOptions struct {
	URL            string
	Timeout        time.Duration
	Token          string
	Scope          string
	IfMatch        string
	IdempotencyKey string
}

func (o *resourceOptions) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.URL, "url", "", "URL of the resource ('resource serve' prints it; default $"+EnvURL+", else "+fencing.DefaultURL+")")
	cmd.Flags().DurationVar(&o.Timeout, "command-timeout", cmdutil.DefaultCommandTimeout, "time limit of one request to the resource")
}

// addFenceFlags adds --token and --scope, defaulting to a holder's
// environment, and --endpoints and --dial-timeout, used only to explain a
// refusal as stale (explainStale).
func (o *resourceOptions) addFenceFlags(cmd *cobra.Command, f *cmdutil.Factory) {
	cmd.Flags().StringVar(&o.Token, "token", f.Getenv("COORD_FENCING_TOKEN"), "fencing token, a positive integer (default $COORD_FENCING_TOKEN)")
	cmd.Flags().StringVar(&o.Scope, "scope", cmdutil.EnvScope(f), "fencing scope: where the held key lives in etcd, PREFIX+NAME/ for a lock or an election, PREFIX+NAME/slots/I for a semaphore's slot (default $COORD_FENCING_SCOPE, which every hold sets)")
	f.AddEndpointFlags(cmd.Flags())
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[cmdutil.EtcdForHintsAnnotation] = "true"
}

// explainStale is run's error, a refusal as stale asked about with etcd's
// revision when the user named an etcd (explainStaleErr).
func explainStale(f *cmdutil.Factory, cmd *cobra.Command, run func() error) error {
	return explainStaleErr(cmd.Context(), f, cmd, run())
}

// fenced checks --token and --scope and returns the token.
func (o *resourceOptions) fenced() (fencing.Token, error) {
	tok, err := cmdutil.ParseTokenFlag(o.Token)
	if err != nil {
		return 0, err
	}
	return tok, cmdutil.CheckScopeFlag(o.Scope)
}

// client returns a client of --url (else $COORDCTL_RESOURCE_URL, else
// fencing.DefaultURL) whose requests are bounded by --command-timeout.
func (o *resourceOptions) client(f *cmdutil.Factory) (*fencing.Client, error) {
	o.URL = cmp.Or(o.URL, f.Getenv(EnvURL), fencing.DefaultURL)
	c, err := fencing.NewClient(fencing.ClientConfig{URL: o.URL, Timeout: o.Timeout})
	switch {
	case errors.Is(err, fencing.ErrInvalidURL):
		return nil, cmdutil.UsageErrorf("invalid --url %q: want http://host:port", o.URL)
	case errors.Is(err, fencing.ErrInvalidTimeout):
		return nil, cmdutil.UsageErrorf("invalid --command-timeout %s: must be positive", o.Timeout)
	}
	return c, err
}

// requestKind says whether a client command's request changes the
// resource, which decides what a request without an answer means.
type requestKind bool

const (
	readRequest  requestKind = false
	writeRequest requestKind = true
)

// runResourceClient makes a client command's one request with a client of
// o and prints the answer; a stale token is fencing.ErrStale, exit 5. A
// request that got no answer is "unreachable" (exit 1) when it never
// reached the resource; a write that did reach it is an outcome unknown
// (exit 6): the resource may have applied it, and a script that retried on
// exit 1 would write twice.
func runResourceClient[T interface{ WriteText(io.Writer) error }](ctx context.Context, f *cmdutil.Factory, o *resourceOptions, kind requestKind, call func(context.Context, *fencing.Client) (T, error)) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	// A closed or full stdout (resource put ... | true, > /dev/full) must
	// not turn an applied write into death by SIGPIPE or exit 1, which a
	// script would retry: the exit says what happened to the request, and
	// the failed print is noted on stderr (as coordctl sql does).
	_ = f.HoldOutput(p)
	c, err := o.client(f)
	if err != nil {
		return err
	}
	defer c.CloseIdleConnections()
	var sent atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(i httptrace.WroteRequestInfo) {
			if i.Err == nil {
				sent.Store(true)
			}
		},
	})
	res, err := call(ctx, c)
	if err != nil {
		return o.noAnswer(err, kind, sent.Load())
	}
	return p.Print(cmdutil.TextOutput{V: res})
}

// noAnswer is the error of a request that failed: the resource's own answer
// (stale, 404, ...) as it is; otherwise whether the request was sent in
// full decides between unreachable and outcome unknown.
func (o *resourceOptions) noAnswer(err error, kind requestKind, sent bool) error {
	var se *fencing.StaleError
	var ae *fencing.APIError
	if errors.As(err, &se) || errors.As(err, &ae) {
		return err
	}
	cause := err
	var ue *url.Error
	if errors.As(err, &ue) {
		cause = ue.Err
		if ue.Timeout() {
			cause = fmt.Errorf("no answer within --command-timeout %s", o.Timeout)
		}
	}
	if !sent {
		return cmdutil.Mark(cmdutil.ErrFailed, fmt.Errorf("resource unreachable at %s: %w", o.URL, cause))
	}
	if kind == readRequest {
		return cmdutil.Mark(cmdutil.ErrFailed, fmt.Errorf("resource at %s: %w", o.URL, cause))
	}
	retry := "look ('coordctl resource log') before retrying"
	if o.IdempotencyKey != "" {
		retry = "a retry with the same --idempotency-key is applied at most once"
	}
	return cmdutil.Mark(cmdutil.ErrUnknown, fmt.Errorf("outcome unknown: the request was sent to the resource at %s and no answer came (%w); it may have been applied: %s", o.URL, cause, retry))
}

func newResourcePutCmd(f *cmdutil.Factory) *cobra.Command {
	opts := &resourceOptions{}
	cmd := &cobra.Command{
		Use:   "put KEY VALUE",
		Short: "Write a value with a fencing token",
		Long: `Write VALUE under KEY in the protected resource, presenting --token for
--scope. A token below the scope's floor is rejected as stale: exit 5. VALUE
'-' reads the value from stdin (at most 1 MiB). A request sent that got no
answer within --command-timeout exits 6, outcome unknown: the resource may
have applied it, so look ('resource log') before retrying, or retry with the
same --idempotency-key; nothing listening at the URL exits 1.

The command does not need etcd. Given one (--endpoints, or
$COORDCTL_ENDPOINTS, which 'coordctl lock' sets for its command), it asks
etcd's current revision after a refusal: a floor above it is a token etcd
never granted (etcd restored without --bump-revision, or a hand-made fence),
and the refusal says how to recover, whatever the gap.

--if-match V writes only if the key's current version is V (0: only if the
key does not exist): optimistic concurrency, the alternative fencing is
compared with. A mismatch exits 1. --idempotency-key K makes a retry safe:
the same key and request are applied once and answered like the first time.`,
		Example: `  coordctl resource put config v1 --token 42 --scope jobs/nightly/
  coordctl lock jobs/nightly --endpoints 10.0.0.5:2379 -- coordctl resource put config v1
  coordctl resource put config v2 --token 42 --scope jobs/nightly/ --if-match 1
  echo hello | coordctl resource put greeting - --token 42 --scope jobs/nightly/ --idempotency-key run-7`,
		Args: cmdutil.ArgsUsage(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return explainStale(f, cmd, func() error { return runResourcePut(cmd.Context(), f, opts, args[0], args[1]) })
		},
	}
	opts.addFlags(cmd)
	opts.addFenceFlags(cmd, f)
	cmd.Flags().StringVar(&opts.IfMatch, "if-match", "", "write only if the key's version is this (0: key must not exist)")
	cmd.Flags().StringVar(&opts.IdempotencyKey, "idempotency-key", "", "apply a retried request once")
	return cmd
}

func runResourcePut(ctx context.Context, f *cmdutil.Factory, opts *resourceOptions, key, value string) error {
	tok, err := opts.fenced()
	if err != nil {
		return err
	}
	if key == "" {
		return cmdutil.UsageErrorf("KEY must not be empty")
	}
	var putOpts []fencing.PutOption
	if opts.IfMatch != "" {
		v, err := strconv.ParseUint(opts.IfMatch, 10, 64)
		if err != nil || strings.HasPrefix(opts.IfMatch, "+") {
			return cmdutil.UsageErrorf("invalid --if-match %q: want a version number", opts.IfMatch)
		}
		putOpts = append(putOpts, fencing.IfMatch(v))
	}
	if opts.IdempotencyKey != "" {
		putOpts = append(putOpts, fencing.WithIdempotencyKey(opts.IdempotencyKey))
	}
	if value == "-" {
		b, err := io.ReadAll(io.LimitReader(f.IO.In, fencing.MaxValueSize+1))
		if err != nil {
			return fmt.Errorf("read value from stdin: %w", err)
		}
		value = string(b)
	}
	return runResourceClient(ctx, f, opts, writeRequest, func(ctx context.Context, c *fencing.Client) (fencing.PutResult, error) {
		return c.Put(ctx, key, value, tok, opts.Scope, putOpts...)
	})
}

func newResourceGetCmd(f *cmdutil.Factory) *cobra.Command {
	opts := &resourceOptions{}
	cmd := &cobra.Command{
		Use:   "get KEY",
		Short: "Read a key of the protected resource",
		Long: `Print the value of KEY exactly as it was put: no newline is added, so
'resource get KEY > f' gives back the bytes 'resource put KEY - < f' wrote
(values are UTF-8 text). With -w json it prints the key, value, version and
the token and scope of the write that set it. A key never written exits 1.`,
		Example: `  coordctl resource get config
  coordctl resource get config -w json --url http://127.0.0.1:7070`,
		Args: cmdutil.ArgsUsage(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] == "" {
				return cmdutil.UsageErrorf("KEY must not be empty")
			}
			return runResourceClient(cmd.Context(), f, opts, readRequest, func(ctx context.Context, c *fencing.Client) (fencing.Entry, error) {
				return c.Get(ctx, args[0])
			})
		},
	}
	opts.addFlags(cmd)
	return cmd
}

func newResourceFenceCmd(f *cmdutil.Factory) *cobra.Command {
	opts := &resourceOptions{}
	cmd := &cobra.Command{
		Use:   "fence",
		Short: "Raise a scope's floor to a token without writing",
		Long: `Raise the floor of --scope to --token, so that from now on the resource
rejects every lower token. A new lock holder fences before it starts work,
closing the window in which its predecessor could still write. A token
below the floor is stale: exit 5; given an etcd (--endpoints or
$COORDCTL_ENDPOINTS) the refusal says whether the floor is above etcd's
current revision (a restore without --bump-revision, or a hand-made fence).
A request sent that got no answer within --command-timeout exits 6, outcome
unknown: the floor may have been raised.`,
		Example: `  coordctl resource fence --token 57 --scope jobs/nightly/
  coordctl lock jobs/nightly -- sh -c 'coordctl resource fence && ./job.sh'`,
		Args: cmdutil.ArgsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			tok, err := opts.fenced()
			if err != nil {
				return err
			}
			return explainStale(f, cmd, func() error {
				return runResourceClient(cmd.Context(), f, opts, writeRequest, func(ctx context.Context, c *fencing.Client) (fencing.FenceResult, error) {
					return c.Fence(ctx, tok, opts.Scope)
				})
			})
		},
	}
	opts.addFlags(cmd)
	opts.addFenceFlags(cmd, f)
	return cmd
}

func newResourceLogCmd(f *cmdutil.Factory) *cobra.Command {
	opts := &resourceOptions{}
	cmd := &cobra.Command{
		Use:   "log",
		Short: "Print the accepted writes and the count of rejected stale requests",
		Long: `Print the writes the resource accepted, in the order it applied them, for
--scope (every scope if empty), then how many stale requests it rejected.
It is the audit trail: with fencing, the tokens of one scope never go down
from one accepted write to the next. -w json prints one object.`,
		Example: `  coordctl resource log --scope jobs/nightly/
  coordctl resource log -w json`,
		Args: cmdutil.ArgsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runResourceClient(cmd.Context(), f, opts, readRequest, func(ctx context.Context, c *fencing.Client) (fencing.LogResult, error) {
				return c.Log(ctx, opts.Scope)
			})
		},
	}
	opts.addFlags(cmd)
	cmd.Flags().StringVar(&opts.Scope, "scope", "", "only this scope (default: every scope)")
	return cmd
}

func newResourceFloorsCmd(f *cmdutil.Factory) *cobra.Command {
	opts := &resourceOptions{}
	cmd := &cobra.Command{
		Use:   "floors",
		Short: "Print every scope's floor and the highest, to choose etcd's revision bump after a restore",
		Long: `Print the floor of every scope (the highest token admitted), then the floor
of every scope that a repair set ('every-scope floor=N', when there is one),
then the highest floor of all: 'highest=N scope=S' (with -w json
{"floors":{SCOPE:FLOOR,...},"all":N,"highest":N,"highest_scope":S}).

Tokens are etcd revisions. An etcd restored from a snapshot, or rebuilt
empty, hands out revisions below these floors, and every real holder is
refused as stale until the revision catches up. Restore with
'etcdutl snapshot restore --bump-revision B --mark-compacted' where B is
above the highest floor printed here (and 'coordctl sql floor --all' for
fenced databases); see docs/operations.md.`,
		Example: `  coordctl resource floors
  coordctl resource floors -w json --url http://127.0.0.1:7070`,
		Args: cmdutil.ArgsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runResourceClient(cmd.Context(), f, opts, readRequest, func(ctx context.Context, c *fencing.Client) (fencing.FloorsResult, error) {
				return c.Floors(ctx)
			})
		},
	}
	opts.addFlags(cmd)
	return cmd
}
