package primitive

import "testing"

// (Was lock.TestLockHolderCount.)
func TestHolderCount(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		shared []bool
		want   int
	}{
		{"none", nil, 0},
		{"writer first", []bool{false, true, true}, 1},
		{"readers then writer", []bool{true, true, false, true}, 2},
		{"only readers", []bool{true, true, true}, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := holderCount(tc.shared); got != tc.want {
				t.Fatalf("holderCount = %d, want %d", got, tc.want)
			}
		})
	}
}

// (Was semaphore.TestSemaphoreSlotOf.)
func TestSlotOf(t *testing.T) {
	t.Parallel()
	cases := []struct {
		key  string
		slot int
		ok   bool
	}{
		{"s/slots/0", 0, true},
		{"s/slots/12", 12, true},
		{"s/slots/012", 0, false},
		{"s/slots/-1", 0, false},
		{"s/slots/x", 0, false},
		{"s/queue/1", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.key, func(t *testing.T) {
			i, ok := SlotOf("s/slots/", tc.key)
			if ok != tc.ok || i != tc.slot {
				t.Fatalf("SlotOf = %d, %v; want %d, %v", i, ok, tc.slot, tc.ok)
			}
		})
	}
}
