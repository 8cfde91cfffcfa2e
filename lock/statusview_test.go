package lock

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A Report prints as coordctl lock status prints it: text lines, and JSON
// with the lease in hex, ttl_s for holders (-1: gone) and none for waiters.
func TestReportPrintedForms(t *testing.T) {
	r := Report{Name: "jobs", Revision: 9,
		Holders: []Entry{{Key: "jobs/read/1f", Token: 5, Lease: 0x1f, Mode: ModeShared, TTL: 4 * time.Second}, {Key: "jobs/read/2a", Token: 6, Lease: 0x2a, Mode: ModeShared, TTL: -1}},
		Waiters: []Entry{{Key: "jobs/3b", Token: 8, Lease: 0x3b, Mode: ModeExclusive}}}
	require.Equal(t, "lock jobs: held at revision 9 by 2, 1 waiting\n"+
		"  holder shared    token=5 lease=1f ttl=4s key=jobs/read/1f\n"+
		"  holder shared    token=6 lease=2a ttl=gone key=jobs/read/2a\n"+
		"  waiter exclusive token=8 lease=3b key=jobs/3b", r.String())
	b, err := json.Marshal(r)
	require.NoError(t, err)
	require.JSONEq(t, `{"name":"jobs","revision":9,"held":true,
		"holders":[{"key":"jobs/read/1f","token":5,"lease":"1f","mode":"shared","ttl_s":4},{"key":"jobs/read/2a","token":6,"lease":"2a","mode":"shared","ttl_s":-1}],
		"waiters":[{"key":"jobs/3b","token":8,"lease":"3b","mode":"exclusive"}]}`, string(b))

	free := Report{Name: "jobs", Revision: 3}
	require.Equal(t, "lock jobs: free at revision 3, 0 waiting", free.String())
	b, err = json.Marshal(free)
	require.NoError(t, err)
	require.JSONEq(t, `{"name":"jobs","revision":3,"held":false,"holders":[],"waiters":[]}`, string(b))
}

func TestWaitingNotice(t *testing.T) {
	w := Waiting{Name: "jobs", Key: "jobs/2", HolderKey: "jobs/1", HolderToken: 7}
	if got, want := w.String(), "waiting for lock jobs (held by key jobs/1, token 7)..."; got != want {
		t.Fatalf("Waiting.String() = %q, want %q", got, want)
	}
}
