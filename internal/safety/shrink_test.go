package safety

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// synthetic numbers steps by their Client field and fails when every one
// of need is in the candidate.
func synthetic(need ...int) func(context.Context, []Step) (bool, error) {
	return func(_ context.Context, steps []Step) (bool, error) {
		have := map[int]bool{}
		for _, s := range steps {
			have[s.Client] = true
		}
		for _, n := range need {
			if !have[n] {
				return false, nil
			}
		}
		return true, nil
	}
}

func numbered(n int) []Step {
	var out []Step
	for i := 1; i <= n; i++ {
		out = append(out, Step{Kind: FaultFreezeClient, Client: i, Hold: time.Second, Quiet: time.Second})
	}
	return out
}

func clients(steps []Step) []int {
	var out []int
	for _, s := range steps {
		out = append(out, s.Client)
	}
	return out
}

func TestShrinkSynthetic(t *testing.T) {
	cases := []struct {
		name string
		n    int
		need []int
	}{
		{"one of sixteen", 16, []int{11}},
		{"two far apart", 16, []int{3, 14}},
		{"two adjacent", 9, []int{4, 5}},
		{"three", 20, []int{1, 10, 20}},
		{"all", 4, []int{1, 2, 3, 4}},
		{"none needed", 6, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var prog bytes.Buffer
			res, err := Shrink(context.Background(), numbered(c.n), 1, &prog, synthetic(c.need...))
			require.NoError(t, err)
			want := c.need
			if want == nil {
				want = []int{}
			}
			got := clients(res.Steps)
			if got == nil {
				got = []int{}
			}
			require.Equal(t, want, got, "the minimal set")
			require.Equal(t, got, slices.DeleteFunc(res.Numbers, func(int) bool { return false }), "numbers name the original steps")
			require.Equal(t, len(res.Attempts), res.Runs, "one run per attempt with runs=1")
			require.Contains(t, prog.String(), "shrink: ")
		})
	}
}

// A flaky failure: the candidate fails only on every third run. With three
// runs per candidate Shrink still finds the minimal set; with one it
// cannot tell and keeps more.
func TestShrinkFlaky(t *testing.T) {
	calls := 0
	flaky := func(ctx context.Context, steps []Step) (bool, error) {
		calls++
		f, _ := synthetic(5, 9)(ctx, steps)
		return f && calls%3 == 0, nil
	}
	res, err := Shrink(context.Background(), numbered(12), 3, nil, flaky)
	require.NoError(t, err)
	require.Equal(t, []int{5, 9}, clients(res.Steps))
	for _, a := range res.Attempts {
		require.LessOrEqual(t, a.Runs, 3)
		if !a.Failed {
			require.Equal(t, 3, a.Runs, "a passing candidate ran every run")
		}
	}
}

func TestShrinkCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Shrink(ctx, numbered(4), 2, nil, synthetic(1))
	require.ErrorIs(t, err, context.Canceled)
}

func TestScheduleFileRoundTrip(t *testing.T) {
	steps := Compact(Schedule(3, []FaultKind{FaultIsolateLeader, FaultFreezeClient}, 3, 5, 2*time.Second, 20*time.Second))
	require.Equal(t, time.Second, steps[0].At)
	require.Equal(t, steps[0].At+steps[0].Hold+steps[0].Quiet, steps[1].At, "back to back")
	require.Equal(t, steps[len(steps)-1].At+steps[len(steps)-1].Hold+steps[len(steps)-1].Quiet, End(steps))
	var b bytes.Buffer
	require.NoError(t, WriteSchedule(&b, ScheduleFile{Check: "lock-safety", Seed: 3, Steps: steps}))
	require.Contains(t, b.String(), `"hold": "`, "durations as strings")
	require.Contains(t, b.String(), "not_replayed")
	f, err := ReadSchedule(&b)
	require.NoError(t, err)
	require.Equal(t, steps, f.Steps)
	require.Equal(t, int64(3), f.Seed)

	for name, in := range map[string]string{
		"unknown kind":  `{"steps":[{"kind":"meteor","hold":"1s","quiet":"1s"}]}`,
		"no hold":       `{"steps":[{"kind":"freeze-client","hold":"0s","quiet":"1s"}]}`,
		"bad duration":  `{"steps":[{"kind":"freeze-client","hold":"soon","quiet":"1s"}]}`,
		"back in time":  `{"steps":[{"kind":"freeze-client","hold":"1s","quiet":"1s","at":"5s"},{"kind":"freeze-client","hold":"1s","quiet":"1s","at":"2s"}]}`,
		"member 4":      `{"steps":[{"kind":"stop-member","member":4,"hold":"1s","quiet":"1s"}]}`,
		"unknown field": `{"stepz":[]}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ReadSchedule(strings.NewReader(in))
			require.ErrorIs(t, err, ErrBadSchedule)
		})
	}
	require.ErrorIs(t, ValidateSchedule([]Step{{Kind: FaultFreezeClient, Client: 6, Hold: time.Second}}, 5), ErrBadSchedule)
}

func TestFreezeEffect(t *testing.T) {
	ok := Op{Outcome: OK, Value: 7}
	stale := Op{Outcome: Stale}
	cases := []struct {
		a    appliedStep
		eff  bool
		word string
	}{
		{appliedStep{}, false, "already pending"},
		{appliedStep{target: "client 2"}, false, "idle client"},
		{appliedStep{target: "client 2", frozen: true, client: 2, token: 9}, false, "no later holder"},
		{appliedStep{target: "client 2", frozen: true, client: 2, token: 9, superseded: true}, false, "wrote nothing"},
		{appliedStep{target: "client 2", frozen: true, client: 2, token: 9, superseded: true, late: &ok}, true, "reached the resource"},
		{appliedStep{target: "client 2", frozen: true, client: 2, token: 9, superseded: true, late: &stale}, true, "rejected as stale"},
	}
	for i, c := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			eff, what := freezeEffect(c.a)
			require.Equal(t, c.eff, eff, what)
			require.Contains(t, what, c.word)
		})
	}
	// A cluster fault: effective when an operation overlapping it failed.
	a := appliedStep{step: Step{Kind: FaultIsolateLeader}, start: 100, end: 200, target: "member 1 (the leader)"}
	h := History{End: 1000, Ops: []Op{{Kind: OpAcquire, Call: 50, Return: 150, Outcome: Fail}, {Kind: OpWrite, Call: 300, Return: 310, Outcome: Fail}}}
	eff, what := windowEffect(a, h)
	require.True(t, eff)
	require.Contains(t, what, "1 client operations failed or went unanswered during it (1 acquire)")
	h.Ops[0].Outcome = OK
	eff, _ = windowEffect(a, h)
	require.False(t, eff)
}
