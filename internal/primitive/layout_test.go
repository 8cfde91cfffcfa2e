package primitive

import (
	"testing"
)

func TestRoleOf(t *testing.T) {
	t.Parallel()
	cases := []struct {
		key  string
		want KeyRole
	}{
		{"n/694d8a2e1f0b3c01", RoleExclusive},
		{"n/read/694d8a2e1f0b3c01", RoleReader},
		{"n/write/1f", RoleWriter},
		{"n/limit", RoleSemLimit},
		{"n/queue/abc", RoleSemQueue},
		{"n/queue/694d8a2e1f0b3c01-0123456789abcdef-12", RoleSemQueue}, // one acquisition's
		{"n/queue/694d8a2e1f0b3c01-0123456789abcdef-", RoleForeign},
		{"n/queue/694d8a2e1f0b3c01-xyz-1", RoleForeign},
		{"n/queue/1f-2f-3-4", RoleForeign},
		{"n/slots/0", RoleSemSlot},
		{"n/slots/12", RoleSemSlot},
		{"n/slots/012", RoleForeign},
		{"n/slots/-1", RoleForeign},
		{"n/child/694d8a2e1f0b3c01", RoleForeign}, // the lock named n/child
		{"n/ABC", RoleForeign},                    // not how lease IDs are printed
		{"n/", RoleForeign},
		{"n/read/1796137933058803600", RoleReader}, // recipes.RWMutex: decimal nanoseconds
		{"n/0123456789abcdef01234", RoleForeign},   // longer than any ID
		{"m/1f", RoleForeign},
		{"n/read/x/1f", RoleForeign},
	}
	for _, tc := range cases {
		t.Run(tc.key, func(t *testing.T) {
			if got := RoleOf("n/", tc.key); got != tc.want {
				t.Fatalf("RoleOf(%q) = %d, want %d", tc.key, got, tc.want)
			}
		})
	}
	if !RoleReader.IsLock() || RoleSemSlot.IsLock() || !RoleSemLimit.IsSemaphore() || RoleForeign.IsSemaphore() {
		t.Fatal("IsLock/IsSemaphore")
	}
}
