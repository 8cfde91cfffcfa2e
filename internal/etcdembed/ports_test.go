package etcdembed_test

import (
	"context"
	"net"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/etcdembed"
)

// A busy port given by the caller is an error naming the URL, matchable as
// EADDRINUSE, before etcd starts (and logs).
func TestStartBusyPortNamesTheURL(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	_, err = etcdembed.Start(context.Background(), etcdembed.Config{
		DataDir: filepath.Join(t.TempDir(), "d"), PeerURL: "http://" + busy.Addr().String(), UnsafeNoFsync: true})
	require.ErrorIs(t, err, syscall.EADDRINUSE)
	require.Contains(t, err.Error(), "peer URL http://"+busy.Addr().String())
}

func TestStartClientTLSNeedsHTTPS(t *testing.T) {
	_, err := etcdembed.Start(context.Background(), etcdembed.Config{
		DataDir: filepath.Join(t.TempDir(), "d"), ClientURL: "http://127.0.0.1:0",
		ClientTLS: &etcdembed.ClientTLS{CertFile: "c", KeyFile: "k"}})
	require.ErrorContains(t, err, "https:// goes with ClientTLS")
}
