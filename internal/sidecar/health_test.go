package sidecar

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The first verdict is news whichever it is (so an application that never
// comes up is logged once), and so is every change; a repeat is not.
func TestAppHealthVerdicts(t *testing.T) {
	a := newAppHealth()
	require.Equal(t, AppStatus{URL: "u", Reason: "no healthy answer yet"}, a.status("u"))
	require.True(t, a.set(false, "down"), "the first verdict, unhealthy")
	require.False(t, a.set(false, "down again"))
	require.Equal(t, AppStatus{URL: "u", Reason: "down again"}, a.status("u"))
	select {
	case <-a.wait():
		t.Fatal("healthy while unhealthy")
	default:
	}
	require.True(t, a.set(true, ""))
	require.False(t, a.set(true, ""))
	<-a.wait()
	require.Equal(t, AppStatus{URL: "u", Healthy: true}, a.status("u"))

	b := newAppHealth()
	require.True(t, b.set(true, ""), "the first verdict, healthy")
	<-b.wait()
}
