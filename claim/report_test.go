package claim

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// What coordctl claim, claim release and claim get print of a Result.
func TestResultReport(t *testing.T) {
	won := Result{Name: "alice", Key: "coordkit/claims/alice", Owner: "n1", Revision: 7, Won: true, Yours: true,
		Lease: clientv3.LeaseID(0x1f), TTL: 30 * time.Second, Left: 12 * time.Second}
	taken := Result{Name: "alice", Key: "coordkit/claims/alice", Owner: "n1", Revision: 7, Lease: 0x1f, TTL: 30 * time.Second}
	yours := taken
	yours.Yours = true
	for _, tc := range []struct {
		name string
		r    Result
		op   Op
		text string
		json string
	}{
		{"won on a lease", won, OpClaim, `claimed "alice" for n1 (revision 7); on lease 1f, expires in 30s unless the lease is renewed`,
			`{"name":"alice","owner":"n1","revision":7,"claimed":true,"yours":true,"key":"coordkit/claims/alice","lease":"1f","ttl_seconds":30}`},
		{"already yours", yours, OpClaim, `"alice" is already yours, n1 (revision 7); nothing written, lease 1f not renewed`,
			`{"name":"alice","owner":"n1","revision":7,"claimed":false,"yours":true,"key":"coordkit/claims/alice","lease":"1f"}`},
		{"taken", taken, OpClaim, `"alice" is taken: owned by n1 since revision 7`,
			`{"name":"alice","owner":"n1","revision":7,"claimed":false,"yours":false,"key":"coordkit/claims/alice","lease":"1f"}`},
		{"released", won, OpRelease, `released "alice" (owner n1, revision 7)`,
			`{"name":"alice","owner":"n1","revision":7,"released":true,"key":"coordkit/claims/alice","lease":"1f"}`},
		{"get", won, OpGet, `"alice" is owned by n1 (revision 7); lease 1f, 12s of 30s left`,
			`{"name":"alice","owner":"n1","revision":7,"key":"coordkit/claims/alice","lease":"1f","ttl_seconds":30,"left_seconds":12}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := tc.r.Report(tc.op)
			require.Equal(t, tc.text, rep.String())
			b, err := json.Marshal(rep)
			require.NoError(t, err)
			require.JSONEq(t, tc.json, string(b))
		})
	}
}
