package session

import (
	"time"

	"github.com/cenkalti/backoff/v5"
)

// Backoff is exponential backoff with full jitter: before retry n (from 0)
// the caller waits a uniformly random time in [0, Cap(n)], Cap(n) = min(Max,
// Initial·2ⁿ), so that a fleet whose attempts failed together (campaigns,
// keepalive streams after a member restarts) does not retry together. The
// waits are drawn with github.com/cenkalti/backoff/v5 (Exponential).
type Backoff struct {
	// Initial is the cap of the first wait; 200ms when zero.
	Initial time.Duration
	// Max caps every wait; 15s when zero.
	Max time.Duration
}

func (b Backoff) withDefaults() Backoff {
	if b.Initial <= 0 {
		b.Initial = 200 * time.Millisecond
	}
	if b.Max <= 0 {
		b.Max = 15 * time.Second
	}
	if b.Max < b.Initial {
		b.Max = b.Initial
	}
	return b
}

// Cap returns the upper bound of the wait before retry n: min(Max, Initial·2ⁿ).
func (b Backoff) Cap(n int) time.Duration {
	b = b.withDefaults()
	c := b.Initial
	for i := 0; i < n && c < b.Max; i++ {
		c *= 2
	}
	return min(c, b.Max)
}

// Exponential returns a fresh github.com/cenkalti/backoff/v5 backoff whose
// NextBackOff before retry n draws uniformly from [0, Cap(n)]: with a
// randomization factor of 1 it draws from [0, 2·interval], so its
// intervals are half the caps. Use one per streak of failures.
func (b Backoff) Exponential() *backoff.ExponentialBackOff {
	b = b.withDefaults()
	return &backoff.ExponentialBackOff{
		InitialInterval:     max(b.Initial/2, 1),
		RandomizationFactor: 1,
		Multiplier:          2,
		MaxInterval:         max(b.Max/2, 1),
	}
}
