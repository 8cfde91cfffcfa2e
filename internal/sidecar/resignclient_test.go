package sidecar

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The resign client: 200 resigned, 409 not (nothing to do), anything else an
// error naming the endpoint; the request carries JSON and the token.
func TestResignClient(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/resign" || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" ||
			r.Header.Get("Authorization") != "Bearer 0123456789abcdef0123" {
			http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
			return
		}
		w.WriteHeader(status)
		switch status {
		case http.StatusOK:
			_ = json.NewEncoder(w).Encode(View{ID: "a"})
		case http.StatusConflict:
			_ = json.NewEncoder(w).Encode(map[string]any{"error": "sidecar: not the leader", "state": View{ID: "a"}})
		default:
			_, _ = w.Write([]byte(`{"error":"wrong token"}`))
		}
	}))
	defer srv.Close()
	req := ResignRequest{URL: srv.URL + "/", Token: "0123456789abcdef0123", Timeout: 5 * time.Second}
	ctx := context.Background()

	res, err := Resign(ctx, req)
	require.NoError(t, err)
	require.Equal(t, ResignResult{Resigned: true, View: View{ID: "a"}}, res)
	require.Equal(t, "resigned id=a", res.String())

	status = http.StatusConflict
	res, err = Resign(ctx, req)
	require.NoError(t, err)
	require.False(t, res.Resigned)
	require.Equal(t, "not resigned id=a: sidecar: not the leader", res.String())

	status = http.StatusUnauthorized
	_, err = Resign(ctx, req)
	require.ErrorContains(t, err, "sidecar resign: "+srv.URL+"/v1/resign answered 401 Unauthorized: wrong token")

	for _, bad := range []ResignRequest{
		{URL: "ftp://x", Timeout: time.Second},
		{URL: srv.URL, Timeout: 0},
	} {
		_, err := Resign(ctx, bad)
		require.Error(t, err, "%+v", bad)
	}
}

// With To the request is a handover (?to=, escaped); a 404 is "not
// resigned" for best (no other candidate) and an error for a named one; a
// 200 whose target left (the error's shape) resigned, with the reason.
func TestResignClientTo(t *testing.T) {
	var gotTo []string
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotTo = append(gotTo, r.URL.Query().Get("to"))
		w.WriteHeader(status)
		switch {
		case status == http.StatusOK && r.URL.Query().Get("to") == "gone":
			_ = json.NewEncoder(w).Encode(apiError{Error: "election: handover target left", View: &View{ID: "a"}})
		case status == http.StatusOK:
			_ = json.NewEncoder(w).Encode(View{ID: "a"})
		default:
			_ = json.NewEncoder(w).Encode(apiError{Error: "election: no such candidate", View: &View{ID: "a"}})
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	req := func(to string) ResignRequest { return ResignRequest{URL: srv.URL, To: to, Timeout: 5 * time.Second} }

	res, err := Resign(ctx, req(ResignToBest))
	require.NoError(t, err)
	require.Equal(t, ResignResult{Resigned: true, View: View{ID: "a"}}, res)
	res, err = Resign(ctx, req("gone"))
	require.NoError(t, err)
	require.Equal(t, "resigned id=a: election: handover target left", res.String())
	_, err = Resign(ctx, req("web 1&x=y"))
	require.NoError(t, err)
	require.Equal(t, []string{"best", "gone", "web 1&x=y"}, gotTo, "the target reaches the server whole")

	status = http.StatusNotFound
	res, err = Resign(ctx, req(ResignToBest))
	require.NoError(t, err, "no other candidate: nothing to do")
	require.Equal(t, "not resigned id=a: election: no such candidate", res.String())
	_, err = Resign(ctx, req("nobody"))
	require.ErrorContains(t, err, "answered 404 Not Found: election: no such candidate")
}
