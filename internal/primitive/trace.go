package primitive

import "context"

// Trace observes an acquisition from the inside, for benchmarks and tests
// (as net/http/httptrace does for a request): it travels in the context of
// the call, so it is not part of any exported API.
type Trace struct {
	// OnLook is called with the waiter's key each time a waiting Lock
	// reads whether its turn has come: once when it starts waiting and once
	// per wake-up after that. A release should wake only the waiter right
	// behind it, so the calls after the first of each Lock count the
	// wake-ups (coordctl bench scale counts herds this way). A watch that
	// breaks also wakes its waiter. It must not block.
	OnLook func(key string)
	// OnRevoke is called with the key a waiter waited for when it revoked
	// that key's lease, which had expired (WatchExpiry). It must not block.
	OnRevoke func(key string)
}

// Revoked calls t.OnRevoke, if t and it are set; for ExpiryConfig.OnRevoke.
func (t *Trace) Revoked(target ExpiryTarget) {
	if t != nil && t.OnRevoke != nil {
		t.OnRevoke(target.Key)
	}
}

type traceKey struct{}

// WithTrace returns ctx carrying t.
func WithTrace(ctx context.Context, t *Trace) context.Context {
	return context.WithValue(ctx, traceKey{}, t)
}

// TraceOf returns the Trace ctx carries, or nil.
func TraceOf(ctx context.Context) *Trace {
	t, _ := ctx.Value(traceKey{}).(*Trace)
	return t
}
