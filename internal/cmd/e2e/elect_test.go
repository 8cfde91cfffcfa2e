package e2e

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
)

func TestElectE2EHandoverOnSIGTERMAndObserve(t *testing.T) {
	t.Parallel()
	srv, cli := etcdtest.StartWithClient(t)
	ep := srv.Endpoints()[0]
	obs := startCoordctl(t, nil, "--endpoints", ep, "-w", "json", "elect", "svc", "--observe")
	require.Equal(t, electJSON{Event: "leader"}, decodeElect(t, obs.line(t)))

	a := startCoordctl(t, nil, "--endpoints", ep, "-w", "json", "elect", "svc", "--id", "a", "--ttl", "5s")
	ea := decodeElect(t, a.line(t))
	require.Equal(t, electJSON{Event: "elected", Name: "svc", ID: "a", Token: ea.Token}, ea)
	ev := decodeElect(t, obs.line(t))
	require.Equal(t, "a", *ev.Leader)
	require.Equal(t, ea.Token, ev.Token)

	b := startCoordctl(t, nil, "--endpoints", ep, "-w", "json", "elect", "svc", "--id", "b", "--ttl", "5s")
	waitForKeys(t, cli, "svc/", 2)
	require.Equal(t, exitOK, a.stop(t), a.stderr.String())
	eb := decodeElect(t, b.line(t))
	require.Equal(t, "elected", eb.Event)
	require.Greater(t, eb.Token, ea.Token)
	ev = decodeElect(t, obs.line(t))
	require.Equal(t, "b", *ev.Leader)

	require.Equal(t, exitOK, b.stop(t), b.stderr.String())
	ev = decodeElect(t, obs.line(t))
	require.Nil(t, ev.Leader, "observe reports no leader")
	require.Equal(t, exitOK, obs.stop(t))
}
