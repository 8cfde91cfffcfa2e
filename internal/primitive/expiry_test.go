package primitive

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

var t0 = time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// reading sent at ms, received 1ms later.
func reading(ms int, ttl int64) leaseReading {
	return leaseReading{sent: at(ms), received: at(ms + 1), ttl: ttl, granted: 2}
}

func withKeys(r leaseReading, on bool) leaseReading {
	r.asked, r.keyOn = true, on
	return r
}

func TestExpiryJudge(t *testing.T) {
	poll := 10 * time.Millisecond
	cases := map[string]struct {
		readings []leaseReading
		want     expiryStep // after the last reading
	}{
		"a lease not found is left alone": {
			[]leaseReading{{gone: true}}, expiryStep{stop: true}},
		"a granted TTL of 1s is never revoked early: a renewal reads 0 at once": {
			[]leaseReading{{sent: at(0), received: at(1), ttl: 0, granted: 1}}, expiryStep{stop: true}},
		"reading r ≥ 2 reads again when it could first read 1": {
			[]leaseReading{reading(0, 5)}, expiryStep{wait: 4*time.Second - time.Millisecond}},
		"reading 1 polls": {
			[]leaseReading{reading(0, 1)}, expiryStep{wait: poll}},
		"reading 1 for a second proves a renewal: only the head keeps polling": {
			[]leaseReading{reading(0, 1), reading(500, 1), reading(1001, 1)}, expiryStep{wait: poll, headOnly: true}},
		"the first 0 starts the second, read at most every 250ms": {
			[]leaseReading{reading(0, 1), reading(10, 0)}, expiryStep{wait: 250 * time.Millisecond}},
		"the reading due at 1s + slack after the first 0 asks for the keys": {
			[]leaseReading{reading(10, 0), reading(300, 0), reading(600, 0), reading(900, 0)},
			expiryStep{wait: 120 * time.Millisecond, confirm: true}},
		"a chain of 0s over 1s + slack, key on the lease: revoke": {
			[]leaseReading{reading(10, 0), reading(300, 0), reading(600, 0), reading(900, 0), withKeys(reading(1021, 0), true)},
			expiryStep{revoke: true}},
		"a reading due without the keys asks once more, with them": {
			[]leaseReading{reading(10, 0), reading(300, 0), reading(600, 0), reading(900, 0), reading(1021, 0)},
			expiryStep{confirm: true}},
		"one ms early is not due": {
			[]leaseReading{reading(10, 0), reading(300, 0), reading(600, 0), reading(900, 0), withKeys(reading(1020, 0), true)},
			expiryStep{wait: 0, confirm: true}},
		"the key is not on the lease: not ours to revoke": {
			[]leaseReading{reading(10, 0), reading(300, 0), reading(600, 0), reading(900, 0), withKeys(reading(1021, 0), false)},
			expiryStep{stop: true}},
		"a 1 in the chain (a renewal) starts it over": {
			[]leaseReading{reading(10, 0), reading(300, 0), reading(600, 1), reading(900, 0), withKeys(reading(1021, 0), true)},
			expiryStep{wait: 250 * time.Millisecond}},
		"a failed reading starts it over": {
			[]leaseReading{reading(10, 0), reading(300, 0), {sent: at(600), received: at(601), failed: true}, reading(900, 0), withKeys(reading(1021, 0), true)},
			expiryStep{wait: 250 * time.Millisecond}},
		"a gap (a send to the next receipt) over G − 1s − 20ms starts it over at the reading after it": {
			[]leaseReading{reading(10, 0), {sent: at(300), received: at(10 + 981), granted: 2}, withKeys(reading(1100, 0), true)},
			expiryStep{wait: 250 * time.Millisecond}},
		"gaps of G − 1s − 20ms keep the chain": {
			[]leaseReading{reading(10, 0), {sent: at(300), received: at(10 + 980), granted: 2}, withKeys(reading(300+980-1, 0), true)},
			expiryStep{revoke: true}},
		"negative readings (expired over a second ago) count as 0": {
			[]leaseReading{reading(10, -1), reading(300, -1), reading(600, -1), reading(900, -1), withKeys(reading(1021, -1), true)},
			expiryStep{revoke: true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			j := expiryJudge{poll: poll}
			var got expiryStep
			for _, r := range tc.readings {
				got = j.observe(r)
			}
			require.Equal(t, tc.want, got)
		})
	}
}

// A simulated lease with keepalives until a crash, read by the judge with
// random delays: whenever the judge revokes, the lease had expired at the
// server when the last reading was taken, and the holder's local deadline
// (send of its last accepted keepalive + G − margin) had passed.
func TestExpiryJudgeNeverRevokesALiveLease(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		G := rapid.IntRange(2, 5).Draw(rt, "ttl_s") * 1000
		margin := rapid.IntRange(0, 200).Draw(rt, "margin_ms")
		crash := rapid.IntRange(0, 20_000).Draw(rt, "crash_ms")
		interval := rapid.IntRange(G/6, G/2).Draw(rt, "keepalive_ms")
		// Renewals: sent at k, applied at k + up, answered at k + up + down.
		type renewal struct{ sent, applied, answered int }
		var rs []renewal
		for k := 0; k < crash; k += interval + rapid.IntRange(0, 50).Draw(rt, "jitter") {
			up := rapid.IntRange(0, 400).Draw(rt, "up")
			rs = append(rs, renewal{k, k + up, k + up + rapid.IntRange(0, 400).Draw(rt, "down")})
		}
		// The server applies renewals in order, each only before the expiry
		// (Renew refuses an expired lease).
		slices.SortFunc(rs, func(a, b renewal) int { return a.applied - b.applied })
		var accepted []renewal
		e := G
		for _, r := range rs {
			if r.applied < e {
				e = r.applied + G
				accepted = append(accepted, r)
			}
		}
		expiry := func(t int) int { // at server time t
			e := G
			for _, r := range accepted {
				if r.applied <= t {
					e = r.applied + G
				}
			}
			return e
		}
		// The holder takes answers in the order they come, each only
		// before its deadline (session's deadline.Renewed).
		byAnswer := slices.Clone(accepted)
		slices.SortFunc(byAnswer, func(a, b renewal) int { return a.answered - b.answered })
		deadline := G - margin
		for _, r := range byAnswer {
			if r.answered >= deadline {
				break
			}
			deadline = max(deadline, r.sent+G-margin)
		}
		j := expiryJudge{poll: 10 * time.Millisecond}
		send := rapid.IntRange(0, 5000).Draw(rt, "first_read_ms")
		confirm := false
		for range 2000 {
			d1, d2 := rapid.IntRange(0, 700).Draw(rt, "d1"), rapid.IntRange(0, 700).Draw(rt, "d2")
			served := send + d1
			e := expiry(served)
			ttl := int64(time.Duration(e-served) * time.Millisecond / time.Second) // truncated toward 0, as etcd's
			r := leaseReading{sent: at(send), received: at(served + d2), ttl: ttl, granted: int64(G / 1000), asked: confirm, keyOn: confirm}
			step := j.observe(r)
			if step.revoke {
				if e > served {
					rt.Fatalf("revoked with the lease's expiry %dms ahead at the last reading (t=%d)", e-served, served)
				}
				if deadline >= send {
					rt.Fatalf("revoked while the holder's deadline (%d) had not passed at the last reading's send (%d)", deadline, send)
				}
				return
			}
			require.False(rt, step.stop)
			send = served + d2 + int(step.wait/time.Millisecond)
			confirm = step.confirm
		}
	})
}

// With prompt answers the judge revokes within poll + slack + 2 round trips
// of the lease's expiry.
func TestExpiryJudgeRevokesSoonAfterExpiry(t *testing.T) {
	for _, expiry := range []int{1000, 1234, 1999, 2000, 5555} {
		j := expiryJudge{poll: 10 * time.Millisecond}
		send, confirm := 0, false
		for {
			ttl := int64(time.Duration(expiry-send) * time.Millisecond / time.Second)
			step := j.observe(leaseReading{sent: at(send), received: at(send + 1), ttl: ttl, granted: 2, asked: confirm, keyOn: confirm})
			require.False(t, step.stop)
			if step.revoke {
				require.GreaterOrEqual(t, send, expiry)
				require.LessOrEqual(t, send, expiry+10+10+3, "expiry %d", expiry)
				break
			}
			send += 1 + int(step.wait/time.Millisecond)
			confirm = step.confirm
		}
	}
}
