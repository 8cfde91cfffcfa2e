package lamport

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLamportClockZeroValueAndRules(t *testing.T) {
	var a, b Clock // zero values, no constructor
	require.Equal(t, Time(0), a.Time())
	require.Equal(t, Time(1), a.Tick(), "rule 1: first local event is 1")
	msg := a.Send()
	require.Equal(t, Time(2), msg, "rule 2: a send is an event")
	require.Equal(t, Time(1), b.Tick())
	require.Equal(t, Time(3), b.Receive(msg), "rule 3: max(1,2)+1")
	require.Equal(t, Time(4), b.Receive(1), "an old message still advances the clock by one")
	require.Equal(t, Time(4), b.Time())
}

func TestLamportClockConcurrentUse(t *testing.T) {
	var c Clock
	const workers, each = 8, 500
	var wg sync.WaitGroup
	seen := make([][]Time, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				var got Time
				switch i % 3 {
				case 0:
					got = c.Tick()
				case 1:
					got = c.Send()
				default:
					got = c.Receive(Time(i)) // may jump ahead
				}
				seen[w] = append(seen[w], got)
			}
		}()
	}
	wg.Wait()
	all := map[Time]bool{}
	for _, s := range seen {
		for i, x := range s {
			require.False(t, all[x], "value %d handed out twice", x)
			all[x] = true
			if i > 0 {
				require.Greater(t, x, s[i-1], "one goroutine's events must get increasing counters")
			}
		}
	}
	require.Len(t, all, workers*each)
	require.GreaterOrEqual(t, c.Time(), Time(workers*each))
}

func TestLamportTimestampOrder(t *testing.T) {
	cases := []struct {
		name string
		a, b Timestamp
		want int
	}{
		{"counter decides", Timestamp{1, "B"}, Timestamp{2, "A"}, -1},
		{"node breaks ties", Timestamp{1, "A"}, Timestamp{1, "B"}, -1},
		{"after", Timestamp{3, "B"}, Timestamp{2, "A"}, 1},
		{"equal", Timestamp{3, "B"}, Timestamp{3, "B"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.a.Compare(tc.b))
			require.Equal(t, -tc.want, tc.b.Compare(tc.a))
			require.Equal(t, tc.want < 0, tc.a.Less(tc.b))
		})
	}
	require.Equal(t, "(3,B)", Timestamp{3, "B"}.String())
}
