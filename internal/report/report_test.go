package report

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/lock"
	"github.com/coordkit/coordkit/semaphore"
)

// A lock's status prints as coordctl lock status prints it: text lines, and
// JSON with the lease in hex, ttl_s for holders (-1: gone) and none for
// waiters. (Was lock.TestReportPrintedForms.)
func TestLockStatusPrintedForms(t *testing.T) {
	r := LockStatus{Name: "jobs", Status: primitive.Status{Revision: 9,
		Holders: []primitive.Entry{{Key: "jobs/read/1f", Token: 5, Lease: 0x1f, Shared: true, Slot: -1, TTL: 4 * time.Second}, {Key: "jobs/read/2a", Token: 6, Lease: 0x2a, Shared: true, Slot: -1, TTL: -1}},
		Waiters: []primitive.Entry{{Key: "jobs/3b", Token: 8, Lease: 0x3b, Slot: -1}}}}
	require.Equal(t, "lock jobs: held at revision 9 by 2, 1 waiting\n"+
		"  holder shared    token=5 lease=1f ttl=4s key=jobs/read/1f\n"+
		"  holder shared    token=6 lease=2a ttl=gone key=jobs/read/2a\n"+
		"  waiter exclusive token=8 lease=3b key=jobs/3b", r.String())
	b, err := json.Marshal(r)
	require.NoError(t, err)
	require.JSONEq(t, `{"name":"jobs","revision":9,"held":true,
		"holders":[{"key":"jobs/read/1f","token":5,"lease":"1f","mode":"shared","ttl_s":4},{"key":"jobs/read/2a","token":6,"lease":"2a","mode":"shared","ttl_s":-1}],
		"waiters":[{"key":"jobs/3b","token":8,"lease":"3b","mode":"exclusive"}]}`, string(b))

	free := LockStatus{Name: "jobs", Status: primitive.Status{Revision: 3}}
	require.Equal(t, "lock jobs: free at revision 3, 0 waiting", free.String())
	b, err = json.Marshal(free)
	require.NoError(t, err)
	require.JSONEq(t, `{"name":"jobs","revision":3,"held":false,"holders":[],"waiters":[]}`, string(b))
}

// A semaphore's status prints as coordctl sem status prints it, under the
// name without the prefix, scopes the slot keys. (Was
// semaphore.TestReportPrintedForms.)
func TestSemStatusPrintedForms(t *testing.T) {
	r := SemStatus{Name: "pool", Status: primitive.Status{Revision: 9, Limit: 2,
		Holders: []primitive.Entry{{Key: "p/pool/slots/1", Slot: 1, Token: 5, Lease: 0x1f, TTL: 4 * time.Second}},
		Waiters: []primitive.Entry{{Key: "p/pool/queue/2a", Slot: -1, Token: 8, Lease: 0x2a}}}}
	require.Equal(t, "semaphore pool: held at revision 9, limit 2 by 1, 1 waiting\n"+
		"  holder scope=p/pool/slots/1 token=5 lease=1f ttl=4s key=p/pool/slots/1\n"+
		"  waiter token=8 lease=2a key=p/pool/queue/2a", r.String())
	b, err := json.Marshal(r)
	require.NoError(t, err)
	require.JSONEq(t, `{"name":"pool","revision":9,"limit":2,"held":true,
		"holders":[{"key":"p/pool/slots/1","token":5,"lease":"1f","slot":1,"scope":"p/pool/slots/1","ttl_s":4}],
		"waiters":[{"key":"p/pool/queue/2a","token":8,"lease":"2a"}]}`, string(b))
	require.Equal(t, "semaphore pool: free at revision 1, no limit stored, 0 waiting", SemStatus{Name: "pool", Status: primitive.Status{Revision: 1}}.String())
}

// (Was semaphore.TestAdminReportForms.)
func TestSemAdminForms(t *testing.T) {
	require.Equal(t, "ok semaphore s limit=3", SemLimit{Name: "s", Limit: 3}.String())
	require.Equal(t, "deleted semaphore s", SemDeleted{Name: "s", Deleted: true}.String())
	require.Equal(t, "semaphore s: nothing to delete", SemDeleted{Name: "s"}.String())
	b, err := json.Marshal(SemDeleted{Name: "s", Deleted: true})
	require.NoError(t, err)
	require.JSONEq(t, `{"name":"s","deleted":true}`, string(b))
	b, err = json.Marshal(SemLimit{Name: "s", Limit: 3})
	require.NoError(t, err)
	require.JSONEq(t, `{"name":"s","limit":3}`, string(b))
}

// (Was lock.TestWaitingNotice and semaphore.TestWaitingNotice.)
func TestWaitingNotices(t *testing.T) {
	require.Equal(t, "waiting for lock jobs (held by key jobs/1, token 7)...",
		LockWaiting(lock.Waiting{Name: "jobs", Key: "jobs/2", HolderKey: "jobs/1", HolderToken: 7}))
	require.Equal(t, "waiting for semaphore s (all 3 slots held)...", SemWaiting(semaphore.Waiting{Name: "s", Limit: 3}))
	require.Equal(t, "waiting for semaphore s (others wait ahead)...", SemWaiting(semaphore.Waiting{Name: "s", Limit: 3, Ahead: true}))
}

// (Was election.TestReportForms.)
func TestElectionForms(t *testing.T) {
	leader := "node-1"
	for _, tc := range []struct {
		name       string
		v          fmt.Stringer
		wantSimple string
		wantJSON   string
	}{
		{"elected", Event{Event: "elected", Name: "s", ID: "n1", Token: 7}, "elected leader of s as n1 (token 7)",
			`{"event":"elected","name":"s","id":"n1","token":7}`},
		{"handed-over", Event{Event: "handed-over", Name: "s", ID: "n1", Token: 7, Reason: "r"}, "handed leadership of s over as n1 (token 7): r",
			`{"event":"handed-over","name":"s","id":"n1","token":7,"reason":"r"}`},
		{"lost", Event{Event: "lost", Name: "s", ID: "n1", Token: 7, Reason: "r"}, "lost leadership of s as n1 (token 7): r",
			`{"event":"lost","name":"s","id":"n1","token":7,"reason":"r"}`},
		{"leader", LeaderEventOf(&election.Leader{Value: leader, Token: 42}), "leader node-1 (token 42)",
			`{"event":"leader","leader":"node-1","token":42}`},
		{"no leader", LeaderEventOf(nil), "no leader", `{"event":"leader","leader":null,"token":0}`},
		{"unknown", LeaderEvent{Event: "unknown", Reason: "etcd gone"}, "no leader known: etcd gone",
			`{"event":"unknown","leader":null,"token":0,"reason":"etcd gone"}`},
		{"no candidates", Candidates{Event: "candidates", Name: "s", Candidates: []election.Candidate{}}, "no candidates in s",
			`{"event":"candidates","name":"s","candidates":[]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.wantSimple, tc.v.String())
			b, err := json.Marshal(tc.v)
			require.NoError(t, err)
			require.JSONEq(t, tc.wantJSON, string(b))
		})
	}
}

// (Was election.TestCandidatesReportOneLinePerCandidate.)
func TestCandidatesOneLinePerCandidate(t *testing.T) {
	cs := []election.Candidate{{Token: 5, Leader: true, Attributes: &election.Attributes{ID: "a"}, Policy: election.PolicyPriority}, {Token: 9}}
	got := Candidates{Name: "s", Candidates: cs}.String()
	require.Equal(t, cs[0].String()+"\n"+cs[1].String(), got)
}

// A held lock and a held slot print as coordctl lock and coordctl sem print
// them once they hold (was the HeldReport assertion of lock's
// TestNewReaderIsTheReadMode, and semaphore's HeldReport forms).
func TestHeldForms(t *testing.T) {
	r := LockHeld{Name: "rd", Scope: "rd/", Key: "rd/read/1f", Token: 7, Lease: "1f", Shared: true}
	require.Equal(t, "holding read lock rd scope=rd/ key=rd/read/1f token=7 lease=1f", r.String())
	b, err := json.Marshal(r)
	require.NoError(t, err)
	require.JSONEq(t, `{"name":"rd","scope":"rd/","key":"rd/read/1f","token":7,"lease":"1f","shared":true}`, string(b))
	r.Shared = false
	require.Equal(t, "holding lock rd scope=rd/ key=rd/read/1f token=7 lease=1f", r.String())
	b, err = json.Marshal(r)
	require.NoError(t, err)
	require.JSONEq(t, `{"name":"rd","scope":"rd/","key":"rd/read/1f","token":7,"lease":"1f"}`, string(b), "shared only for a reader")

	s := SemHeld{Name: "pool", Limit: 3, Slot: 1, Scope: "pool/slots/1", Key: "pool/slots/1", Token: 9, Lease: "2a"}
	require.Equal(t, "holding semaphore pool slot=1 scope=pool/slots/1 key=pool/slots/1 token=9 lease=2a", s.String())
	b, err = json.Marshal(s)
	require.NoError(t, err)
	require.JSONEq(t, `{"name":"pool","limit":3,"slot":1,"scope":"pool/slots/1","key":"pool/slots/1","token":9,"lease":"2a"}`, string(b))
}

// Issue 32: an ID with a newline and quotes cannot forge a line in text
// mode; JSON keeps it as it is.
func TestElectionLinesQuoteIDs(t *testing.T) {
	evil := "a\nleader b (token 999)"
	require.Equal(t, `elected leader of s as "a\nleader b (token 999)" (token 5)`, Event{Event: "elected", Name: "s", ID: evil, Token: 5}.String())
	require.Equal(t, `leader "a\nleader b (token 999)" (token 5)`, LeaderEvent{Event: "leader", Leader: &evil, Token: 5}.String())
	b, err := json.Marshal(LeaderEvent{Event: "leader", Leader: &evil, Token: 5})
	require.NoError(t, err)
	require.Contains(t, string(b), `"leader":"a\nleader b (token 999)"`)
}
