package childproc

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestHoldFlagsValidate(t *testing.T) {
	ok := HoldFlags{TTL: 10 * time.Second, KillGrace: time.Second}
	for _, tc := range []struct {
		name    string
		edit    func(*HoldFlags)
		wantErr string
	}{
		{"defaults", func(*HoldFlags) {}, ""},
		{"ttl too short", func(h *HoldFlags) { h.TTL = time.Millisecond }, "invalid --ttl 1ms: session: TTL out of bounds: must be at least 1s"},
		{"negative timeout", func(h *HoldFlags) { h.Timeout = -time.Second }, "invalid --timeout -1s: must not be negative"},
		{"try and timeout", func(h *HoldFlags) { h.Try, h.Timeout = true, time.Second }, "--try and --timeout exclude each other"},
		{"try alone", func(h *HoldFlags) { h.Try = true }, ""},
		{"negative lock delay", func(h *HoldFlags) { h.LockDelay = -time.Second }, "invalid --lock-delay -1s: must not be negative"},
		{"zero kill grace", func(h *HoldFlags) { h.KillGrace = 0 }, "invalid --kill-grace 0s: must be positive"},
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
