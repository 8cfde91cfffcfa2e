package electcmd

import (
	"context"
	"fmt"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/report"
)

// observeElection prints the leader on every change until ctx ends, and
// what election.Watch says of an outage: etcd not answering on stderr, "no
// leader known" once the shown leader's lease must have expired.
func observeElection(ctx context.Context, f *cmdutil.Factory, p *cmdutil.Printer, e *election.Election) error {
	fmt.Fprintf(f.IO.ErrOut, "observing election %s...\n", e.Name())
	err := e.Watch(ctx, election.WatchConfig{RequestTimeout: f.Global.CommandTimeout, OnEvent: func(ev election.WatchEvent) error {
		switch ev.Kind {
		case election.WatchLeader:
			return p.Print(report.LeaderEventOf(ev.Leader))
		case election.WatchUnknown:
			return p.Print(report.LeaderEvent{Event: "unknown", Reason: ev.Reason})
		case election.WatchDown:
			fmt.Fprintf(f.IO.ErrOut, "coordctl: etcd does not answer (%v): the leader shown may be gone\n", ev.Err)
		case election.WatchUp:
			fmt.Fprintln(f.IO.ErrOut, "coordctl: etcd answers again")
		case election.WatchRetry:
			fmt.Fprintf(f.IO.ErrOut, "coordctl: observe %s: %v; observing again\n", e.Name(), ev.Err)
		}
		return nil
	}})
	if err != nil {
		return fmt.Errorf("observe %s: %w", e.Name(), err)
	}
	return nil
}
