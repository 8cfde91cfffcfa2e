package etcdtest

import (
	"context"
	"testing"
	"time"
)

// Ctx is a context for one test: cancelled when it ends, or after d.
func Ctx(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Recv receives what is, or will be, on ch; it fails t after d.
func Recv[T any](t testing.TB, ch <-chan T, what string, d time.Duration) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("timed out after %s waiting for %s", d, what)
		panic("unreachable")
	}
}

// NotYet fails t if ch delivers within d: what must still be waiting. (A
// short d can only miss a wrong delivery, never report a right one wrong.)
func NotYet[T any](t testing.TB, ch <-chan T, what string, d time.Duration) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("%s returned while it had to wait: %+v", what, v)
	case <-time.After(d):
	}
}
