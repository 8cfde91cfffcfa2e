package sidecar

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNewRegistryHasRuntimeCollectors(t *testing.T) {
	mfs, err := NewRegistry().Gather()
	require.NoError(t, err)
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	require.True(t, names["go_goroutines"], "the Go collector")
}
