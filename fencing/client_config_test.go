package fencing_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing"
)

func TestClientConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  fencing.ClientConfig
		want error
	}{
		{"http", fencing.ClientConfig{URL: "http://127.0.0.1:7070", Timeout: time.Second}, nil},
		{"https with a path", fencing.ClientConfig{URL: "https://res.example/base", Timeout: time.Second}, nil},
		{"no scheme", fencing.ClientConfig{URL: "127.0.0.1:7070", Timeout: time.Second}, fencing.ErrInvalidURL},
		{"other scheme", fencing.ClientConfig{URL: "ftp://h", Timeout: time.Second}, fencing.ErrInvalidURL},
		{"no host", fencing.ClientConfig{URL: "http://", Timeout: time.Second}, fencing.ErrInvalidURL},
		{"empty", fencing.ClientConfig{Timeout: time.Second}, fencing.ErrInvalidURL},
		{"unparsable", fencing.ClientConfig{URL: "http://[::1", Timeout: time.Second}, fencing.ErrInvalidURL},
		{"zero timeout", fencing.ClientConfig{URL: "http://h:1"}, fencing.ErrInvalidTimeout},
		{"negative timeout", fencing.ClientConfig{URL: "http://h:1", Timeout: -time.Second}, fencing.ErrInvalidTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.want)
			_, err = fencing.NewClient(tc.cfg)
			require.ErrorIs(t, err, tc.want)
		})
	}
}

// NewClient's client talks to the resource within its timeout and has its
// own connections, which CloseIdleConnections releases.
func TestNewClient(t *testing.T) {
	res, err := fencing.NewResource(fencing.ResourceConfig{DataDir: t.TempDir()})
	require.NoError(t, err)
	defer res.Close()
	srv := httptest.NewServer(res)
	defer srv.Close()
	c, err := fencing.NewClient(fencing.ClientConfig{URL: srv.URL, Timeout: 5 * time.Second})
	require.NoError(t, err)
	require.Equal(t, 5*time.Second, c.HTTP.Timeout)
	_, err = c.Fence(context.Background(), 7, "s")
	require.NoError(t, err)
	c.CloseIdleConnections()
	(&fencing.Client{BaseURL: srv.URL}).CloseIdleConnections() // nil HTTP: nothing to close
}
