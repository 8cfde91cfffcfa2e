package fencing

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHighest(t *testing.T) {
	tests := []struct {
		name      string
		floors    map[string]Token
		wantScope string
		want      Token
	}{
		{"none", nil, "", 0},
		{"one", map[string]Token{"a": 5}, "a", 5},
		{"the highest", map[string]Token{"a": 5, "b": 900, "c": 7}, "b", 900},
		{"a tie goes to the smallest scope", map[string]Token{"z": 9, "m": 9, "q": 1}, "m", 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, f := Highest(tt.floors)
			require.Equal(t, tt.wantScope, s)
			require.Equal(t, tt.want, f)
		})
	}
}

func TestResourceFloorsEndpoint(t *testing.T) {
	r, err := NewResource(ResourceConfig{DataDir: t.TempDir()})
	require.NoError(t, err)
	defer r.Close()
	srv := httptest.NewServer(r)
	defer srv.Close()
	c := &Client{BaseURL: srv.URL}
	ctx := context.Background()

	f, err := c.Floors(ctx)
	require.NoError(t, err)
	require.Empty(t, f.Floors)
	require.Zero(t, f.Highest)

	_, err = c.Fence(ctx, 40, "jobs/a")
	require.NoError(t, err)
	_, err = c.Put(ctx, "k", "v", 700, "jobs/b")
	require.NoError(t, err)
	f, err = c.Floors(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]Token{"jobs/a": 40, "jobs/b": 700}, f.Floors)
	require.Equal(t, Token(700), f.Highest)
	require.Equal(t, "jobs/b", f.HighestScope)
}

// A resource that answers "floors": null still gives a non-nil map, so
// that what coordctl prints is {"floors":{}}.
func TestClientFloorsNeverNil(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"floors":null,"highest":0,"highest_scope":""}`)
	}))
	defer srv.Close()
	f, err := (&Client{BaseURL: srv.URL}).Floors(context.Background())
	require.NoError(t, err)
	require.NotNil(t, f.Floors)
}
