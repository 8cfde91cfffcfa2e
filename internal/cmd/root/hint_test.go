package root

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	resource "github.com/coordkit/coordkit/internal/cmd/resource"
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

// A floor above etcd's current revision is a restore whatever the gap; a
// floor etcd granted is a predecessor's, whatever the gap; without etcd the
// hint guesses from the gap and says it is a guess.
func TestHintRestoreWhateverTheGap(t *testing.T) {
	stale := &fencing.StaleError{Scope: "s", Token: 4, Floor: 62}
	far := &fencing.StaleError{Scope: "s", Token: 4, Floor: 5000}
	for _, tc := range []struct {
		name string
		err  error
		want []string // empty: no hint
	}{
		{"floor above etcd's revision, small gap", &resource.StaleContext{Err: stale, Revision: 10},
			[]string{"floor 62 is above etcd's current revision 10", "--bump-revision N --mark-compacted", "coordctl resource floors"}},
		{"floor etcd granted, small gap", &resource.StaleContext{Err: stale, Revision: 62}, nil},
		{"floor etcd granted, large gap", &resource.StaleContext{Err: far, Revision: 9000}, nil},
		{"no etcd, small gap", stale, nil},
		{"no etcd, large gap: a guess", far, []string{"a guess, no etcd was asked", "--bump-revision"}},
		{"etcd did not answer, large gap", &resource.StaleContext{Err: far, AskErr: errors.New("unreachable")},
			[]string{"a guess, etcd could not be asked: unreachable"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hint(nil, fmt.Errorf("put: %w", tc.err))
			if len(tc.want) == 0 {
				require.Empty(t, h)
			}
			for _, w := range tc.want {
				require.Contains(t, h, w)
			}
		})
	}
}
