package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/lock"
)

type lockStatusOptions struct {
	Name   string
	Prefix string
}

func newLockStatusCmd(f *factory) *cobra.Command {
	opts := &lockStatusOptions{}
	cmd := &cobra.Command{
		Use:   "status NAME [--prefix P]",
		Short: "Show who holds the lock NAME and who waits for it",
		Long: `Read the keys of the lock NAME in one request at one revision and print its
holders (one writer, or the readers that share it) with key, fencing token,
lease and the TTL the lease has left on the server, then the waiters in the
order they will be served. It reads every layout coordkit and etcd use:
coordctl lock (with and without --read), etcdctl lock, concurrency.Mutex and
recipes.RWMutex.

Exit 0 when the lock is held, 3 when nobody holds it (the output says
"free"). -w json prints one object:
  {"name":N,"revision":R,"held":BOOL,
   "holders":[{"key":K,"token":T,"lease":"HEX","mode":"exclusive"|"shared","ttl_s":S}],
   "waiters":[{"key":K,"token":T,"lease":"HEX","mode":M}]}
ttl_s is -1 when the lease was already gone when asked.

This is the status subcommand of 'coordctl lock': to hold a lock named
"status", use 'coordctl lock --name status'.`,
		Example: `  coordctl lock status jobs/nightly
  coordctl lock status jobs/nightly -w json
  coordctl lock status jobs/nightly >/dev/null || echo "nobody holds it"`,
		Args: statusArgs("lock", "lock"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			return runLockStatus(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Prefix, "prefix", "", "the etcd key prefix the lock's keys are under (as given to coordctl lock --prefix)")
	return cmd
}

// statusArgs checks the one NAME of lock status and sem status; the
// message says how to hold something named "status".
func statusArgs(command, noun string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != 1 {
			return usageErrorf(`%s status needs exactly one NAME (to hold a %s named "status": coordctl %s --name status)`, command, noun, command)
		}
		return nil
	}
}

// statusEntry is one holder or waiter as lock status and sem status print
// it; its JSON form is the stable contract (lease in hex, as etcdctl).
type statusEntry struct {
	Key   string        `json:"key"`
	Token fencing.Token `json:"token"`
	Lease string        `json:"lease"`
	Mode  string        `json:"mode,omitempty"`
	Slot  *int          `json:"slot,omitempty"`
	Scope string        `json:"scope,omitempty"`
	TTL   *int64        `json:"ttl_s,omitempty"` // holders only; -1: lease gone
}

func newStatusEntry(key string, token fencing.Token, lease clientv3.LeaseID) statusEntry {
	return statusEntry{Key: key, Token: token, Lease: fmt.Sprintf("%x", int64(lease))}
}

func ttlSeconds(d time.Duration) *int64 {
	s := int64(d / time.Second)
	if d < 0 {
		s = -1
	}
	return &s
}

// lockStatusOut is what coordctl lock status prints.
type lockStatusOut struct {
	Name     string        `json:"name"`
	Revision int64         `json:"revision"`
	Held     bool          `json:"held"`
	Holders  []statusEntry `json:"holders"`
	Waiters  []statusEntry `json:"waiters"`
}

func (o lockStatusOut) WriteSimple(w io.Writer) error {
	return writeStatus(w, fmt.Sprintf("lock %s", o.Name), o.Revision, "", o.Holders, o.Waiters)
}

// writeStatus prints a status in the text form lock and sem status share.
func writeStatus(w io.Writer, what string, rev int64, extra string, holders, waiters []statusEntry) error {
	var b strings.Builder
	if len(holders) == 0 {
		fmt.Fprintf(&b, "%s: free at revision %d%s, %d waiting\n", what, rev, extra, len(waiters))
	} else {
		fmt.Fprintf(&b, "%s: held at revision %d%s by %d, %d waiting\n", what, rev, extra, len(holders), len(waiters))
	}
	line := func(role string, e statusEntry) {
		fmt.Fprintf(&b, "  %-6s", role)
		if e.Mode != "" {
			fmt.Fprintf(&b, " %-9s", e.Mode)
		}
		if e.Scope != "" {
			fmt.Fprintf(&b, " scope=%s", e.Scope)
		}
		fmt.Fprintf(&b, " token=%d lease=%s", e.Token, e.Lease)
		if e.TTL != nil {
			if *e.TTL < 0 {
				b.WriteString(" ttl=gone")
			} else {
				fmt.Fprintf(&b, " ttl=%ds", *e.TTL)
			}
		}
		fmt.Fprintf(&b, " key=%s\n", e.Key)
	}
	for _, e := range holders {
		line("holder", e)
	}
	for _, e := range waiters {
		line("waiter", e)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func runLockStatus(ctx context.Context, f *factory, opts *lockStatusOptions) error {
	p, client, err := f.startEtcd(ctx, func() error { return needName("lock status", opts.Name) })
	if err != nil {
		return err
	}
	defer client.Close()
	cctx, cancel := f.CommandContext(ctx)
	defer cancel()
	st, err := lock.Status(cctx, client, opts.Prefix+opts.Name)
	if err != nil {
		return fmt.Errorf("lock status %s: %w", opts.Name, err)
	}
	out := lockStatusOut{Name: opts.Name, Revision: st.Revision, Held: st.Held(), Holders: []statusEntry{}, Waiters: []statusEntry{}}
	for _, e := range st.Holders {
		se := newStatusEntry(e.Key, e.Token, e.Lease)
		se.Mode, se.TTL = string(e.Mode), ttlSeconds(e.TTL)
		out.Holders = append(out.Holders, se)
	}
	for _, e := range st.Waiters {
		se := newStatusEntry(e.Key, e.Token, e.Lease)
		se.Mode = string(e.Mode)
		out.Waiters = append(out.Waiters, se)
	}
	if err := p.Print(out); err != nil {
		return err
	}
	if !out.Held {
		return reported(mark(errNotAcquired, fmt.Errorf("lock %s is free", opts.Name)))
	}
	return nil
}
