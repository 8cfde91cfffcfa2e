package semaphore

import (
	"testing"
	"time"
)

func TestSemaphoreChooseSlot(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	set := func(is ...int) map[int]bool {
		m := map[int]bool{}
		for _, i := range is {
			m[i] = true
		}
		return m
	}
	cases := []struct {
		name   string
		held   map[int]bool
		limit  int
		lostAt map[int]time.Time
		delay  time.Duration
		want   choice
	}{
		{"empty", set(), 3, nil, 0, choice{slot: 0, take: true}},
		{"lowest free", set(0, 2), 3, nil, 0, choice{slot: 1, take: true}},
		{"full", set(0, 1, 2), 3, nil, 0, choice{}},
		{"after a lower limit: slots above still count", set(2, 3), 2, nil, 0, choice{}},
		{"after a lower limit: one above, one free below", set(3), 2, nil, 0, choice{slot: 0, take: true}},
		{"delayed slot skipped", set(), 2, map[int]time.Time{0: t0}, time.Second, choice{slot: 1, take: true}},
		{"only a delayed slot", set(1), 2, map[int]time.Time{0: t0.Add(-300 * time.Millisecond)}, time.Second, choice{wait: 700 * time.Millisecond}},
		{"delay over", set(1), 2, map[int]time.Time{0: t0.Add(-2 * time.Second)}, time.Second, choice{slot: 0, take: true}},
		{"no delay configured", set(1), 2, map[int]time.Time{0: t0}, 0, choice{slot: 0, take: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := chooseSlot(tc.held, tc.limit, tc.lostAt, tc.delay, t0); got != tc.want {
				t.Fatalf("chooseSlot = %+v, want %+v", got, tc.want)
			}
		})
	}
}
