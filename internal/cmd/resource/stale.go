package resource

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

// The explanation of a refusal as stale: a floor above the current revision
// of the etcd that grants the tokens is a restore (RestoreHint, which every
// command's error goes through in root), whatever the gap.

// restoreGap is how far below the floor a refused token must be for the
// refusal to name a restored etcd as the likely cause when no etcd could be
// asked. A predecessor's token lags the floor by the etcd writes made while
// the two overlapped; an etcd restored from a snapshot lags by every write
// since the snapshot. The figure is a guess, and the hint says so.
const restoreGap = 1000

// StaleContext is a refusal as stale (it wraps a *fencing.StaleError, so it
// still matches fencing.ErrStale and exits 5) with what the command learnt
// from the etcd that grants the tokens; RestoreHint reads it.
type StaleContext struct {
	Err error
	// Revision is etcd's current revision, read after the refusal; 0 when
	// etcd was not asked or did not answer.
	Revision int64
	// AskErr is why etcd did not answer, nil if it did or was not asked.
	AskErr error
}

func (e *StaleContext) Error() string { return e.Err.Error() }
func (e *StaleContext) Unwrap() error { return e.Err }

// etcdKnown reports whether the user named an etcd for cmd: --endpoints on
// the command line, or $COORDCTL_ENDPOINTS (which a hold sets for its
// command). The default endpoint is nobody's choice and is not asked.
func etcdKnown(f *cmdutil.Factory, cmd *cobra.Command) bool {
	if fl := cmd.Flags().Lookup("endpoints"); fl != nil && fl.Changed {
		return true
	}
	return strings.TrimSpace(f.Getenv(cmdutil.EnvEndpoints)) != ""
}

// etcdRevision dials the endpoints and returns etcd's current revision:
// the header of a linearizable count-only read, so no revision etcd has
// granted exceeds it.
func etcdRevision(ctx context.Context, f *cmdutil.Factory) (int64, error) {
	if err := f.Global.Validate(); err != nil {
		return 0, &cmdutil.UsageError{Err: err}
	}
	cli, err := f.EtcdClient(ctx)
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	cctx, cancel := f.CommandContext(ctx)
	defer cancel()
	resp, err := cli.Get(cctx, "coordkit/revision", clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("read etcd's revision at %s: %w", strings.Join(f.Global.SplitEndpoints(), ","), err)
	}
	return resp.Header.Revision, nil
}

// explainStaleErr returns err as it is unless it is a refusal as stale with a
// floor above the token and the user named an etcd for cmd (etcdKnown);
// then it asks that etcd for its current revision and returns err in a
// *StaleContext, for RestoreHint.
func explainStaleErr(ctx context.Context, f *cmdutil.Factory, cmd *cobra.Command, err error) error {
	var se *fencing.StaleError
	if !errors.As(err, &se) || se.Floor <= se.Token || !etcdKnown(f, cmd) {
		return err
	}
	rev, askErr := etcdRevision(ctx, f)
	return &StaleContext{Err: err, Revision: rev, AskErr: askErr}
}

// RestoreHint explains a refusal as stale whose floor no holder of today's
// etcd can reach: a floor above etcd's current revision is a token etcd
// never granted — it was restored from a snapshot or rebuilt without
// --bump-revision, or the floor was fenced by hand — whatever the gap, and
// every holder stays refused until etcd's revision passes it. Where etcd was
// not asked (no StaleContext with a revision) it falls back to a guess from
// the gap and says it is one. "" for any other error.
func RestoreHint(err error) string {
	var se *fencing.StaleError
	if !errors.As(err, &se) || se.Floor <= se.Token {
		return ""
	}
	const fix = "restore etcd with 'etcdutl snapshot restore --bump-revision N --mark-compacted', N above the highest floor " +
		"('coordctl resource floors', 'coordctl sql floor --all'); see docs/operations.md"
	var sc *StaleContext
	if errors.As(err, &sc) && sc.Revision > 0 {
		if int64(se.Floor) <= sc.Revision {
			return "" // a floor etcd granted: a later holder fenced it
		}
		return fmt.Sprintf(" (the floor %d is above etcd's current revision %d: etcd never granted it, so etcd was restored "+
			"from a snapshot or rebuilt without --bump-revision, or the floor was fenced by hand, and every holder stays "+
			"refused until etcd's revision passes %d; %s)", se.Floor, sc.Revision, se.Floor, fix)
	}
	if se.Floor-se.Token <= restoreGap {
		return ""
	}
	why := "no etcd was asked (give --endpoints to check)"
	if sc != nil && sc.AskErr != nil {
		why = fmt.Sprintf("etcd could not be asked: %v", sc.AskErr)
	}
	return fmt.Sprintf(" (a guess, %s: token %d is %d below the floor, far more than a predecessor's usually is; "+
		"if etcd was restored from a snapshot or rebuilt, its revisions restarted below the floors: %s)",
		why, se.Token, se.Floor-se.Token, fix)
}
