package pglock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/pglock"
)

// Acquire's steps: the grant and the token, and which step an error names.
func TestAcquireStepsAndErrors(t *testing.T) {
	dsn := fresh(t)
	ctx := context.Background()
	require.NoError(t, pglock.CreateSequence(ctx, admin(t, dsn), "tokens"))

	_, _, err := pglock.Acquire(ctx, pglock.AcquireConfig{DSN: dsn})
	require.ErrorIs(t, err, pglock.ErrInvalid, "no name")

	l, tok, err := pglock.Acquire(ctx, pglock.AcquireConfig{DSN: dsn, Name: "a", Sequence: "tokens", Keepalive: pglock.DefaultKeepalive})
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	require.True(t, l.Alive())
	require.Equal(t, fencing.Token(1), tok, "the sequence's first value")

	_, _, err = pglock.Acquire(ctx, pglock.AcquireConfig{DSN: dsn, Name: "a", Timeout: 200 * time.Millisecond})
	require.ErrorIs(t, err, pglock.ErrNotAcquired, "a holds")
	require.ErrorIs(t, err, context.DeadlineExceeded, "the step's own error still matches")
	require.NotErrorIs(t, err, pglock.ErrNoToken)

	_, _, err = pglock.Acquire(ctx, pglock.AcquireConfig{DSN: dsn, Name: "b", Sequence: "missing"})
	require.ErrorIs(t, err, pglock.ErrNoToken)
	require.NotErrorIs(t, err, pglock.ErrNotAcquired)
	require.Contains(t, err.Error(), "pglock: token of b from missing", "the step's text is kept")

	// The failed token closed its connection: b is free again.
	l2, tok, err := pglock.Acquire(ctx, pglock.AcquireConfig{DSN: dsn, Name: "b", Timeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = l2.Close() })
	require.Zero(t, tok, "no sequence, no token")
}
