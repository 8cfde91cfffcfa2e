package root

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

// The etcd hint goes only with commands that ask etcd.
func TestHintOnlyWhereEtcdWasAsked(t *testing.T) {
	f := cmdutil.NewFactory(cmdutil.IOStreams{})
	etcdCmd := &cobra.Command{Use: "lock"}
	f.AddEndpointFlags(etcdCmd.Flags())
	other := &cobra.Command{Use: "put"}
	err := fmt.Errorf("put x: %w", context.DeadlineExceeded)
	if h := hint(etcdCmd, err); !strings.Contains(h, "etcd did not answer") {
		t.Errorf("a command with --endpoints: hint %q", h)
	}
	if h := hint(other, err); h != "" {
		t.Errorf("a command without etcd got %q", h)
	}
	if h := hint(nil, err); h != "" {
		t.Errorf("no command: %q", h)
	}
}
