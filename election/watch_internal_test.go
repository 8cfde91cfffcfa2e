package election

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The outage decision: down once, "no leader known" only after the shown
// leader's lease TTL without an answer (the election's TTL when the lease's
// is unknown), up again once, and then a fresh read of the leader.
func TestWatchOutageDecision(t *testing.T) {
	t0 := time.Unix(1000, 0)
	down := errors.New("no answer")
	kinds := func(evs []WatchEvent) []WatchKind {
		var k []WatchKind
		for _, e := range evs {
			k = append(k, e.Kind)
		}
		return k
	}
	for _, tc := range []struct {
		name     string
		leaseTTL time.Duration
		wantTTL  time.Duration
	}{
		{"the lease's granted TTL", 3 * time.Second, 3 * time.Second},
		{"the election's TTL when the lease's is unknown", 0, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &outage{lastOK: t0, defaultTTL: 10 * time.Second}
			o.leader(&Leader{Value: "a", Token: 7}, tc.leaseTTL)
			evs, restart := o.probed(t0.Add(time.Second), down, t0.Add(time.Second))
			require.Equal(t, []WatchKind{WatchDown}, kinds(evs))
			require.False(t, restart)
			evs, _ = o.probed(t0.Add(tc.wantTTL), down, t0.Add(tc.wantTTL))
			require.Empty(t, evs, "not unknown at exactly the TTL, and down is said once")
			evs, _ = o.probed(t0.Add(tc.wantTTL+time.Second), down, t0.Add(tc.wantTTL+time.Second))
			require.Equal(t, []WatchKind{WatchUnknown}, kinds(evs))
			require.Contains(t, evs[0].Reason, "of the last leader a (token 7)")
			require.Contains(t, evs[0].Reason, tc.wantTTL.String())
			evs, _ = o.probed(t0.Add(tc.wantTTL+2*time.Second), down, t0.Add(tc.wantTTL+2*time.Second))
			require.Empty(t, evs, "unknown is said once")
			evs, restart = o.probed(t0.Add(tc.wantTTL+3*time.Second), nil, t0.Add(tc.wantTTL+3*time.Second))
			require.Equal(t, []WatchKind{WatchUp}, kinds(evs))
			require.True(t, restart, "after unknown the leader is read afresh")
		})
	}
	// No leader shown: nothing to be unknown about.
	o := &outage{lastOK: t0, defaultTTL: time.Second}
	o.leader(nil, 0)
	evs, _ := o.probed(t0, down, t0.Add(time.Minute))
	require.Equal(t, []WatchKind{WatchDown}, kinds(evs))
	evs, restart := o.probed(t0.Add(time.Minute), nil, t0.Add(time.Minute))
	require.Equal(t, []WatchKind{WatchUp}, kinds(evs))
	require.False(t, restart)
}

func TestWatchConfigValidate(t *testing.T) {
	require.ErrorContains(t, WatchConfig{}.Validate(), "needs OnEvent")
	on := func(WatchEvent) error { return nil }
	require.Error(t, WatchConfig{OnEvent: on, ProbeEvery: -1}.Validate())
	require.NoError(t, WatchConfig{OnEvent: on}.Validate())
}

// Issue 32: "no leader known" is due at the shown leader's TTL after the
// last answer, whether or not a probe has failed by then (a probe waits for
// its own timeout: elect --observe said it 5.8s after a 2s lease could have
// expired).
func TestWatchUnknownDueAtTheTTLWithoutAFailedProbe(t *testing.T) {
	t0 := time.Unix(1000, 0)
	o := &outage{lastOK: t0, defaultTTL: 10 * time.Second}
	_, ok := o.unknownAt()
	require.False(t, ok, "no leader shown, nothing due")
	o.leader(&Leader{Value: "a", Token: 7}, 2*time.Second)
	at, ok := o.unknownAt()
	require.True(t, ok)
	require.Equal(t, t0.Add(2*time.Second), at)
	require.Empty(t, o.silentPast(at), "not at exactly the TTL")
	evs := o.silentPast(at.Add(time.Millisecond))
	require.Len(t, evs, 2)
	require.Equal(t, WatchDown, evs[0].Kind)
	require.Equal(t, WatchUnknown, evs[1].Kind)
	require.Contains(t, evs[1].Reason, "longer than the lease TTL 2s of the last leader a (token 7)")
	_, ok = o.unknownAt()
	require.False(t, ok, "said once")
	evs, restart := o.probed(at.Add(time.Second), nil, at.Add(time.Second))
	require.Equal(t, WatchUp, evs[0].Kind)
	require.True(t, restart)
}
