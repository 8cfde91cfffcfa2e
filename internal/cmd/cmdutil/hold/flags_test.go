package hold

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestHoldFlagsValidate(t *testing.T) {
	ok := Flags{TTL: 10 * time.Second, KillGrace: time.Second}
	for _, tc := range []struct {
		name    string
		edit    func(*Flags)
		wantErr string
	}{
		{"defaults", func(*Flags) {}, ""},
		{"ttl too short", func(h *Flags) { h.TTL = time.Millisecond }, "invalid --ttl 1ms: session: TTL out of bounds: must be at least 1s"},
		{"negative timeout", func(h *Flags) { h.Timeout = -time.Second }, "invalid --timeout -1s: must not be negative"},
		{"try and timeout", func(h *Flags) { h.Try, h.Timeout = true, time.Second }, "--try and --timeout exclude each other"},
		{"try alone", func(h *Flags) { h.Try = true }, ""},
		{"negative lock delay", func(h *Flags) { h.LockDelay = -time.Second }, "invalid --lock-delay -1s: must not be negative"},
		{"zero kill grace", func(h *Flags) { h.KillGrace = 0 }, "invalid --kill-grace 0s: must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := ok
			tc.edit(&h)
			err := h.Validate()
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}
