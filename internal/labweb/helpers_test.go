package labweb

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/cluster"
)

// startLab starts a cluster of n nodes, a Lab and a Server on a free
// loopback port; all are closed when the test ends.
func startLab(t *testing.T, n int, o Options, cfg ServerConfig) (*Lab, *Server) {
	t.Helper()
	lab, err := New(startCluster(t, n), o)
	require.NoError(t, err)
	t.Cleanup(lab.Close)
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	srv, err := NewServer(lab, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	return lab, srv
}

// startCluster starts a cluster of n nodes, closed when the test ends.
func startCluster(t *testing.T, n int) *cluster.Cluster {
	t.Helper()
	ccfg := cluster.DefaultConfig()
	ccfg.Nodes = n
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := cluster.New(ctx, ccfg)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}
