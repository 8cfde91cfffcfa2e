package fencing_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing"
)

func TestLocalServerServesOverHTTPAndCloses(t *testing.T) {
	s, err := fencing.StartLocal(fencing.ResourceConfig{DataDir: t.TempDir()})
	require.NoError(t, err)
	c := s.Client(5 * time.Second)
	ctx := context.Background()
	_, err = c.Put(ctx, "k", "v", 7, "scope")
	require.NoError(t, err)
	_, err = c.Put(ctx, "k", "late", 6, "scope")
	require.ErrorIs(t, err, fencing.ErrStale)
	require.Equal(t, fencing.Token(7), s.Floor("scope"))
	require.NoError(t, s.Close())
	_, err = c.Get(ctx, "k")
	require.Error(t, err, "nothing serves after Close")
}
