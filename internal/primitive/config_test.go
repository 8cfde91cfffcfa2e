package primitive

import (
	"errors"
	"testing"
	"time"

	"github.com/coordkit/coordkit/session"
)

// Validate is the one place the rules of a primitive's configuration live:
// each broken rule is named by its field and matches its sentinel.
func TestConfigValidate(t *testing.T) {
	t.Parallel()
	lock := Config{Kind: KindLock, Name: "jobs/nightly"}
	sem := Config{Kind: KindSemaphore, Name: "pool", Limit: 3}
	cases := []struct {
		name  string
		cfg   func() Config
		field Field // "" when valid
		is    error
	}{
		{"a lock", func() Config { return lock }, "", nil},
		{"a semaphore", func() Config { return sem }, "", nil},
		{"a prefixed election", func() Config { return Config{Kind: KindElection, Name: "svc", Prefix: "/"} }, "", nil},
		{"bad name", func() Config { c := lock; c.Name = "x/"; return c }, FieldName, session.ErrInvalidName},
		{"prefix with a space", func() Config { c := lock; c.Prefix = "a b/"; return c }, FieldPrefix, ErrInvalid},
		{"ttl too short", func() Config { c := lock; c.TTL = 500 * time.Millisecond; return c }, FieldTTL, session.ErrBadTTL},
		{"ttl too long", func() Config { c := lock; c.TTL = session.MaxTTL + time.Second; return c }, FieldTTL, session.ErrBadTTL},
		{"negative lock delay", func() Config { c := lock; c.LockDelay = -time.Second; return c }, FieldLockDelay, ErrInvalid},
		{"an election's lock delay", func() Config { return Config{Kind: KindElection, Name: "e", LockDelay: time.Second} }, FieldLockDelay, ErrInvalid},
		{"limit 0", func() Config { c := sem; c.Limit = 0; return c }, FieldLimit, ErrInvalid},
		{"a lock's limit", func() Config { c := lock; c.Limit = 2; return c }, FieldLimit, ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg().Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field || !errors.Is(err, tc.is) {
				t.Fatalf("Validate() = %v, want a FieldError on %q matching %v", err, tc.field, tc.is)
			}
		})
	}
}
