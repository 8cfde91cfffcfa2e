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
