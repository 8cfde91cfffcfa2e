package election

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReportForms(t *testing.T) {
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
		{"leader", LeaderEventOf(&Leader{Value: leader, Token: 42}), "leader node-1 (token 42)",
			`{"event":"leader","leader":"node-1","token":42}`},
		{"no leader", LeaderEventOf(nil), "no leader", `{"event":"leader","leader":null,"token":0}`},
		{"unknown", LeaderEvent{Event: "unknown", Reason: "etcd gone"}, "no leader known: etcd gone",
			`{"event":"unknown","leader":null,"token":0,"reason":"etcd gone"}`},
		{"no candidates", CandidatesReport{Event: "candidates", Name: "s", Candidates: []Candidate{}}, "no candidates in s",
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

func TestCandidatesReportOneLinePerCandidate(t *testing.T) {
	cs := []Candidate{{Token: 5, Leader: true, Attributes: &Attributes{ID: "a"}, Policy: PolicyPriority}, {Token: 9}}
	got := CandidatesReport{Name: "s", Candidates: cs}.String()
	require.Equal(t, cs[0].String()+"\n"+cs[1].String(), got)
}

func TestDefaultValueIsHostnamePID(t *testing.T) {
	v := DefaultValue()
	require.True(t, strings.HasSuffix(v, fmt.Sprintf("-%d", os.Getpid())), v)
	if host, err := os.Hostname(); err == nil && host != "" {
		require.Equal(t, fmt.Sprintf("%s-%d", host, os.Getpid()), v)
	}
}
