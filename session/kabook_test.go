package session

import (
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"pgregory.net/rapid"
)

// A step of a keepalive stream as the book sees it.
type bookStep struct {
	send   clientv3.LeaseID // a request for this lease went out (0: none)
	answer clientv3.LeaseID // a response for this lease came in (0: none)
	brk    bool             // the stream broke
}

func TestKaBookMatching(t *testing.T) {
	const a, b, unknown = clientv3.LeaseID(1), clientv3.LeaseID(2), clientv3.LeaseID(99)
	cases := []struct {
		name  string
		steps []bookStep
		// want[i] is the index (into the sends, from 0) of the request step
		// i's answer is paired with, -1 for an answer that must be dropped;
		// ignored for other steps.
		want []int
		left int // outstanding at the end
	}{
		{"one request, one answer", []bookStep{{send: a}, {answer: a}}, []int{0, 0}, 0},
		{"answers in order per lease", []bookStep{{send: a}, {send: a}, {answer: a}, {answer: a}}, []int{0, 0, 0, 1}, 0},
		{"leases interleaved", []bookStep{{send: a}, {send: b}, {send: a}, {answer: a}, {answer: b}, {answer: a}}, []int{0, 0, 0, 0, 1, 2}, 0},
		{"late answer pairs with the oldest, not the newest", []bookStep{{send: a}, {send: a}, {send: a}, {answer: a}}, []int{0, 0, 0, 0}, 2},
		{"surplus answer is dropped", []bookStep{{send: a}, {answer: a}, {answer: a}}, []int{0, 0, -1}, 0},
		{"unknown lease is dropped", []bookStep{{send: a}, {answer: unknown}, {answer: a}}, []int{0, -1, 0}, 0},
		{"break drains; an old answer after it is dropped", []bookStep{{send: a}, {send: b}, {brk: true}, {answer: a}}, []int{0, 0, 0, -1}, 0},
		{"after a break, pairing starts over", []bookStep{{send: a}, {brk: true}, {send: a}, {answer: a}}, []int{0, 0, 0, 1}, 0},
	}
	t0 := time.Unix(1000, 0)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var book kaBook
			sends := 0
			for i, st := range tc.steps {
				switch {
				case st.send != 0:
					book.sent(st.send, kaPending{sentAt: t0.Add(time.Duration(sends) * time.Second)})
					sends++
				case st.answer != 0:
					p, ok := book.answer(st.answer)
					if tc.want[i] < 0 {
						if ok {
							t.Fatalf("step %d: answer for %d paired with the request sent at %s, want dropped", i, st.answer, p.sentAt)
						}
						continue
					}
					if !ok {
						t.Fatalf("step %d: answer for %d dropped, want paired with request %d", i, st.answer, tc.want[i])
					}
					if want := t0.Add(time.Duration(tc.want[i]) * time.Second); !p.sentAt.Equal(want) {
						t.Fatalf("step %d: paired with the request sent at %s, want %s", i, p.sentAt, want)
					}
				case st.brk:
					book.drain()
				}
			}
			if got := book.outstanding(); got != tc.left {
				t.Fatalf("outstanding = %d, want %d", got, tc.left)
			}
		})
	}
}

// The property: driven by a server that answers a stream's requests in
// order (as etcd does), after any mix of sends, late answers, surplus
// answers, answers for unknown leases, abandoned waits and breaks, every
// answer the book pairs carries the send time of the very request the
// server answered, and each lease's local deadline never passes send time
// + TTL − margin of a request the server acknowledged.
func TestKaBookPropertyDeadlineNeverPassesAnAcknowledgedSend(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		const leases = 3
		margin := time.Duration(rapid.IntRange(1, 500).Draw(t, "margin_ms")) * time.Millisecond
		t0 := time.Unix(1000, 0)
		now := t0
		type req struct {
			lease  clientv3.LeaseID
			sentAt time.Time
		}
		var (
			book  kaBook
			wire  []req // sent on this stream, not answered yet, in order
			dl    = map[clientv3.LeaseID]*deadline{}
			bound = map[clientv3.LeaseID]time.Time{} // latest acknowledged sentAt + ttl - margin
		)
		for l := clientv3.LeaseID(1); l <= leases; l++ {
			dl[l] = newDeadline(t0, 10*time.Second, margin)
			bound[l] = t0.Add(10*time.Second - margin)
		}
		outstanding := func(l clientv3.LeaseID) int {
			n := 0
			for _, r := range wire {
				if r.lease == l {
					n++
				}
			}
			return n
		}
		steps := rapid.IntRange(1, 200).Draw(t, "steps")
		for range steps {
			now = now.Add(time.Duration(rapid.IntRange(0, 2000).Draw(t, "advance_ms")) * time.Millisecond)
			switch rapid.IntRange(0, 9).Draw(t, "op") {
			case 0, 1, 2, 3: // a session sends (an abandoned wait changes nothing here: the request stays)
				l := clientv3.LeaseID(rapid.IntRange(1, leases).Draw(t, "lease"))
				book.sent(l, kaPending{sentAt: now})
				wire = append(wire, req{l, now})
			case 4, 5, 6: // the server answers the oldest request on the wire, however late
				if len(wire) == 0 {
					continue
				}
				r := wire[0]
				wire = wire[1:]
				ttl := time.Duration(rapid.IntRange(1, 20).Draw(t, "ttl_s")) * time.Second
				p, ok := book.answer(r.lease)
				if !ok {
					t.Fatalf("answer for lease %d (sent at %s) dropped", r.lease, r.sentAt.Sub(t0))
				}
				if !p.sentAt.Equal(r.sentAt) {
					t.Fatalf("answer for lease %d paired with send at %s, the server answered the send at %s", r.lease, p.sentAt.Sub(t0), r.sentAt.Sub(t0))
				}
				if b := r.sentAt.Add(ttl - margin); b.After(bound[r.lease]) {
					bound[r.lease] = b
				}
				dl[r.lease].Renewed(p.sentAt, ttl, now)
			case 7: // a surplus answer, or one for a lease never sent for
				l := clientv3.LeaseID(rapid.IntRange(1, leases+1).Draw(t, "surplus_lease"))
				if l <= leases && outstanding(l) > 0 {
					continue // indistinguishable from the real answer: etcd never sends it
				}
				if p, ok := book.answer(l); ok {
					t.Fatalf("surplus answer for lease %d paired with the send at %s", l, p.sentAt.Sub(t0))
				}
			case 8, 9: // the stream breaks mid-flight; a new one starts empty
				if rapid.IntRange(0, 2).Draw(t, "break") != 0 {
					continue
				}
				if got := len(book.drain()); got != len(wire) {
					t.Fatalf("drain returned %d requests, %d were outstanding", got, len(wire))
				}
				wire = nil
			}
			for l, d := range dl {
				if d.Until().After(bound[l]) {
					t.Fatalf("lease %d: deadline %s is past the latest acknowledged send + TTL - margin %s", l, d.Until().Sub(t0), bound[l].Sub(t0))
				}
			}
			if book.outstanding() != len(wire) {
				t.Fatalf("book has %d outstanding, the wire %d", book.outstanding(), len(wire))
			}
		}
	})
}

func TestAlignKeepAlive(t *testing.T) {
	base := time.Unix(1000, 0) // a multiple of every grid below
	ms := time.Millisecond
	cases := []struct {
		name      string
		now       time.Duration // after base
		d, grid   time.Duration
		want      time.Duration
		wantOnGrd bool
	}{
		{"no grid", 7 * ms, 3 * time.Second, 0, 3 * time.Second, false},
		{"already on the grid", 0, 3 * time.Second, 50 * ms, 3 * time.Second, true},
		{"rounds down within half a grid", 10 * ms, 3 * time.Second, 50 * ms, 3*time.Second - 10*ms, true},
		{"rounds up past half a grid", 30 * ms, 3 * time.Second, 50 * ms, 3*time.Second + 20*ms, true},
		{"exactly half rounds up", 25 * ms, 3 * time.Second, 50 * ms, 3*time.Second + 25*ms, true},
		{"a wait shorter than the grid is left alone", 10 * ms, 20 * ms, 50 * ms, 20 * ms, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			now := base.Add(tc.now)
			got := alignKeepAlive(now, tc.d, tc.grid)
			if got != tc.want {
				t.Fatalf("alignKeepAlive = %s, want %s", got, tc.want)
			}
			if tc.wantOnGrd && now.Add(got).UnixNano()%int64(tc.grid) != 0 {
				t.Fatalf("%s is not on the %s grid", now.Add(got), tc.grid)
			}
			if diff := got - tc.d; diff > tc.grid/2 || diff < -tc.grid/2 {
				t.Fatalf("moved by %s, more than half the grid", diff)
			}
		})
	}
}
