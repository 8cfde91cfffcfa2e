package session

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestDeadlineRenewal(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	ttl, margin := 10*time.Second, time.Second
	cases := []struct {
		name      string
		sentAt    time.Duration // after t0
		answerAt  time.Duration
		wantOK    bool
		wantUntil time.Duration
	}{
		{"renewal moves deadline from send time", 3 * time.Second, 4 * time.Second, true, 12 * time.Second},
		{"slow answer still counts from send", 3 * time.Second, 8 * time.Second, true, 12 * time.Second},
		{"answer after the deadline is loss", 3 * time.Second, 9 * time.Second, false, 9 * time.Second},
		{"an old request cannot move the deadline back", -time.Second, 2 * time.Second, true, 9 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newDeadline(t0, ttl, margin)
			ok := d.Renewed(t0.Add(tc.sentAt), ttl, t0.Add(tc.answerAt))
			if ok != tc.wantOK {
				t.Fatalf("Renewed = %v, want %v", ok, tc.wantOK)
			}
			if got := d.Until().Sub(t0); got != tc.wantUntil {
				t.Fatalf("deadline = t0+%s, want t0+%s", got, tc.wantUntil)
			}
			if ok != d.Alive(t0.Add(tc.answerAt)) {
				t.Fatalf("Alive disagrees with Renewed")
			}
		})
	}
}

func TestDeadlineOnceLostStaysLost(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(0, 0)
	d := newDeadline(t0, 5*time.Second, time.Second)
	if !d.Alive(t0.Add(3999 * time.Millisecond)) {
		t.Fatal("alive before the deadline")
	}
	if d.Alive(t0.Add(4 * time.Second)) {
		t.Fatal("must be lost at the deadline")
	}
	// A keepalive sent just before the deadline and answered after it, or
	// even a fresh one, must not resurrect the session.
	if d.Renewed(t0.Add(3*time.Second), 5*time.Second, t0.Add(3500*time.Millisecond)) {
		t.Fatal("renewal after loss must fail")
	}
	if d.Alive(t0.Add(3 * time.Second)) {
		t.Fatal("lost is permanent")
	}
}

// The local deadline never lies after the earliest time the server could
// expire the lease: for any sequence of keepalives (server resets expiry to
// receipt + ttl, receipt ≥ send), while Alive(now) is true, now < server expiry.
func TestDeadlineNeverOutlivesServerLease(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		ttl := time.Duration(rapid.IntRange(1, 30).Draw(t, "ttl_s")) * time.Second
		margin := time.Duration(rapid.Int64Range(1, int64(ttl)-1).Draw(t, "margin"))
		t0 := time.Unix(0, 0)
		d := newDeadline(t0, ttl, margin)
		serverExpiry := t0.Add(ttl) // granted on receipt, receipt ≥ t0
		now := t0
		steps := rapid.IntRange(1, 40).Draw(t, "steps")
		for i := 0; i < steps; i++ {
			now = now.Add(time.Duration(rapid.Int64Range(0, int64(ttl)).Draw(t, "gap")))
			sent := now
			oneWay := time.Duration(rapid.Int64Range(0, int64(ttl)).Draw(t, "oneway"))
			receivedByServer := sent.Add(oneWay)
			answered := receivedByServer.Add(time.Duration(rapid.Int64Range(0, int64(ttl)).Draw(t, "back")))
			if receivedByServer.Before(serverExpiry) {
				serverExpiry = receivedByServer.Add(ttl)
				d.Renewed(sent, ttl, answered)
			}
			now = answered
			if d.Alive(now) && !now.Before(serverExpiry) {
				t.Fatalf("alive at %s but the server lease expired at %s", now.Sub(t0), serverExpiry.Sub(t0))
			}
			if !d.Until().Before(serverExpiry) {
				t.Fatalf("deadline %s not before server expiry %s", d.Until().Sub(t0), serverExpiry.Sub(t0))
			}
		}
	})
}
