package sidecar

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/election"
)

func TestSidecarHTTPCandidatesAndResignTo(t *testing.T) {
	var asked []string
	resignTo := func(_ context.Context, to string) error {
		asked = append(asked, to)
		switch to {
		case "nobody":
			return election.ErrNoCandidate
		case "past-etcdctl":
			return election.ErrHandoverBlocked
		case "standby":
			return ErrNotLeader
		case "slow":
			return errors.New("timed out")
		}
		return nil
	}
	tr := NewTracker("svc", "svc/", "a", fixedClock{t0})
	api := NewAPI(APIConfig{Tracker: tr, Policy: election.PolicyPriority, ResignTo: resignTo,
		Resign: func(context.Context) error { asked = append(asked, "(plain)"); return nil },
		Candidates: func(context.Context) ([]election.Candidate, error) {
			return []election.Candidate{{Key: "svc/1", Token: 5, Value: "a", Leader: true,
				Attributes: &election.Attributes{ID: "a", Priority: 3}, Policy: election.PolicyPriority}, {Key: "svc/2", Token: 6, Value: "etcdctl"}}, nil
		}})
	srv := httptest.NewServer(api)
	t.Cleanup(func() { api.Close(); srv.Close() })

	code, body := get(t, srv.URL+"/v1/candidates")
	require.Equal(t, 200, code)
	require.Contains(t, body, `"policy":"priority","candidates":[{"key":"svc/1","lease":0,"token":5,"value":"a","leader":true,"attributes":{"id":"a","priority":3},"policy":"priority"}`)
	require.Contains(t, body, `{"key":"svc/2","lease":0,"token":6,"value":"etcdctl","leader":false}`, "a foreign candidate has no attributes")

	post := func(query string) int {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/resign"+query, strings.NewReader("{}"))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	cases := []struct {
		query string
		want  int
	}{
		{"?to=b", 200},
		{"?to=best", 200},
		{"?to=nobody", 404},
		{"?to=past-etcdctl", 409},
		{"?to=standby", 409},
		{"?to=slow", 503},
		{"?to=", 400},
		{"", 200},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, post(tc.query), tc.query)
	}
	require.Equal(t, []string{"b", election.Best, "nobody", "past-etcdctl", "standby", "slow", "(plain)"}, asked)
}

func TestSidecarHTTPCandidatesUnavailable(t *testing.T) {
	tr := NewTracker("svc", "svc/", "a", fixedClock{t0})
	api := NewAPI(APIConfig{Tracker: tr})
	srv := httptest.NewServer(api)
	t.Cleanup(func() { api.Close(); srv.Close() })
	code, _ := get(t, srv.URL+"/v1/candidates")
	require.Equal(t, http.StatusNotImplemented, code)
}

func TestCoordinationCheck(t *testing.T) {
	require.NoError(t, Coordination{}.check())
	require.NoError(t, Coordination{Policy: election.PolicyNewestVersion, Version: "v2.0.0-rc.1"}.check())
	require.ErrorIs(t, Coordination{Policy: "random"}.check(), ErrBadConfig)
	require.ErrorIs(t, Coordination{Version: "latest"}.check(), ErrBadConfig)
	if v := DefaultVersion(); v != "" {
		t.Logf("binary version %q (semantic: %v)", v, election.ValidVersion(v))
	}
}
