package electbench

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/scenarios/report"
)

func TestRollingValidate(t *testing.T) {
	ok := RollingOptions{Replicas: 3, Binary: "coordctl", PreemptRounds: 1}
	require.NoError(t, ok.Validate())
	for name, o := range map[string]RollingOptions{
		"one replica": {Replicas: 1, Binary: "coordctl", PreemptRounds: 1},
		"no binary":   {Replicas: 3, PreemptRounds: 1},
		"no preempt":  {Replicas: 3, Binary: "coordctl"},
		"short ttl":   {Replicas: 3, Binary: "coordctl", PreemptRounds: 1, TTL: time.Millisecond},
	} {
		require.ErrorIs(t, o.Validate(), ErrOptions, name)
	}
}

// The commands' log, read and analysed: changes inside the roll only, the
// gap before each, an overlap, a token out of order.
func TestRollingLogAnalysis(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	ms := func(n int64) int64 { return 1_000_000_000_000 + n*int64(time.Millisecond) }
	lines := []string{
		"start 5 " + itoa(ms(0)) + " r1-v1.0.0",
		"stop 5 " + itoa(ms(100)) + " r1-v1.0.0",
		"start 9 " + itoa(ms(110)) + " r2-v1.0.0", // gap 10ms
		"stop 9 " + itoa(ms(200)) + " r2-v1.0.0",
		"start 12 " + itoa(ms(195)) + " r1-v2.0.0", // overlap
		"stop 12 " + itoa(ms(300)) + " r1-v2.0.0",
		"start 11 " + itoa(ms(330)) + " r3-v1.0.0", // gap 30ms, token down
	}
	require.NoError(t, os.WriteFile(path, []byte(joinLines(lines)), 0o600))
	ls, err := readLeaderships(path)
	require.NoError(t, err)
	require.Len(t, ls, 4)
	require.Equal(t, 2, ls[1].slot)
	s := analyze(ls, time.Unix(0, ms(50)), time.Unix(0, ms(400)))
	require.Equal(t, 3, s.changes)
	require.Equal(t, 1, s.overlaps)
	require.False(t, s.tokensOK)
	require.Equal(t, []time.Duration{10 * time.Millisecond, 30 * time.Millisecond}, s.gaps)
	require.Equal(t, 40*time.Millisecond, s.leaderless)
	// Changes before the roll do not count.
	require.Equal(t, 1, analyze(ls, time.Unix(0, ms(250)), time.Unix(0, ms(400))).changes)

	r := &roller{o: RollingOptions{Replicas: 3}}
	t0 := time.Unix(0, ms(0))
	r.events = []slotEvent{{1, t0, true}, {2, t0, true}, {3, t0, true}, {1, time.Unix(0, ms(150)), false}, {1, time.Unix(0, ms(160)), true}}
	tl := r.timeline(ls, t0, time.Unix(0, ms(400)))
	require.Len(t, tl.Lanes, 3)
	var states []string
	for _, sp := range tl.Lanes[0].Spans {
		states = append(states, sp.State)
	}
	require.Equal(t, []string{report.StateLeader, report.StateFollower, report.StateDown, report.StateFollower, report.StateLeader, report.StateFollower}, states)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func joinLines(ls []string) string { return strings.Join(ls, "\n") + "\n" }
