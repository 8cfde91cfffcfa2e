package semaphore

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A Report prints as coordctl sem status prints it; Named renames it and
// its scopes (a prefix is not part of the fencing scope).
func TestReportPrintedForms(t *testing.T) {
	r := Report{Name: "p/pool", Revision: 9, Limit: 2,
		Holders: []Entry{{Key: "p/pool/slots/1", Slot: 1, Scope: "p/pool#1", Token: 5, Lease: 0x1f, TTL: 4 * time.Second}},
		Waiters: []Entry{{Key: "p/pool/queue/2a", Slot: -1, Token: 8, Lease: 0x2a}}}
	n := r.Named("pool")
	require.Equal(t, "p/pool#1", r.Holders[0].Scope, "Named copies the holders")
	require.Equal(t, "semaphore pool: held at revision 9, limit 2 by 1, 1 waiting\n"+
		"  holder scope=pool#1 token=5 lease=1f ttl=4s key=p/pool/slots/1\n"+
		"  waiter token=8 lease=2a key=p/pool/queue/2a", n.String())
	b, err := json.Marshal(n)
	require.NoError(t, err)
	require.JSONEq(t, `{"name":"pool","revision":9,"limit":2,"held":true,
		"holders":[{"key":"p/pool/slots/1","token":5,"lease":"1f","slot":1,"scope":"pool#1","ttl_s":4}],
		"waiters":[{"key":"p/pool/queue/2a","token":8,"lease":"2a"}]}`, string(b))
	require.Equal(t, "semaphore pool: free at revision 1, no limit stored, 0 waiting", Report{Name: "pool", Revision: 1}.String())
}

func TestAdminReportForms(t *testing.T) {
	require.Equal(t, "ok semaphore s limit=3", LimitReport{Name: "s", Limit: 3}.String())
	require.Equal(t, "deleted semaphore s", DeleteReport{Name: "s", Deleted: true}.String())
	require.Equal(t, "semaphore s: nothing to delete", DeleteReport{Name: "s"}.String())
	b, err := json.Marshal(DeleteReport{Name: "s", Deleted: true})
	require.NoError(t, err)
	require.JSONEq(t, `{"name":"s","deleted":true}`, string(b))
	b, err = json.Marshal(LimitReport{Name: "s", Limit: 3})
	require.NoError(t, err)
	require.JSONEq(t, `{"name":"s","limit":3}`, string(b))
}

func TestWaitingNotice(t *testing.T) {
	require.Equal(t, "waiting for semaphore s (all 3 slots held)...", Waiting{Name: "s", Limit: 3}.String())
	require.Equal(t, "waiting for semaphore s (others wait ahead)...", Waiting{Name: "s", Limit: 3, Ahead: true}.String())
}

func TestParseLimit(t *testing.T) {
	n, err := ParseLimit("4")
	require.NoError(t, err)
	require.Equal(t, 4, n)
	for _, bad := range []string{"0", "-1", "x", "", "1.5"} {
		_, err := ParseLimit(bad)
		require.ErrorIs(t, err, ErrInvalid, bad)
	}
}
