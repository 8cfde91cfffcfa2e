package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/lock"
)

func TestExitCode(t *testing.T) {
	t.Parallel()
	stale := &fencing.StaleError{Scope: "s", Token: 1, Floor: 2}
	for _, tc := range []struct {
		name   string
		err    error
		code   int
		silent bool
	}{
		{"nil", nil, ExitOK, false},
		{"plain error", errors.New("boom"), ExitError, false},
		{"usage", UsageErrorf("bad --x"), ExitUsage, false},
		{"interrupted", fmt.Errorf("wait: %w", context.Canceled), ExitOK, false},
		{"lock held by another", fmt.Errorf("try: %w", lock.ErrLocked), ExitNotAcquired, false},
		{"not acquired in time", Mark(ErrNotAcquired, errors.New("lock x not acquired within 1s")), ExitNotAcquired, false},
		{"lost", Mark(ErrLost, fmt.Errorf("lost lock x: %w", context.Canceled)), ExitLost, false},
		{"lost, reported", Reported(ErrLost), ExitLost, true},
		{"stale", fmt.Errorf("put: %w", stale), ExitStale, false},
		{"stale, reported", Reported(stale), ExitStale, true},
		{"commit outcome unknown", fmt.Errorf("sql: %w", sqlfence.ErrCommitUnknown), ExitUnknown, false},
		{"outside the fence", fmt.Errorf("sql: %w", sqlfence.ErrOutsideFence), ExitUnknown, false},
		{"unknown, though interrupted", Mark(ErrUnknown, context.Canceled), ExitUnknown, false},
		{"failed although canceled", Reported(Mark(ErrFailed, context.Canceled)), ExitError, true},
		{"child status", &ChildExitError{Code: 42}, 42, true},
		{"child status 0", &ChildExitError{Code: 0}, ExitOK, true},
		{"child not found", &ChildStartError{Err: fmt.Errorf("start: %w", exec.ErrNotFound)}, ExitCommandNotFound, false},
		{"child path missing", &ChildStartError{Err: fmt.Errorf("start: %w", os.ErrNotExist)}, ExitCommandNotFound, false},
		{"child not executable", &ChildStartError{Err: os.ErrPermission}, ExitCannotExecute, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.code, ExitCode(tc.err))
			if tc.err != nil {
				require.Equal(t, tc.silent, Silent(tc.err))
			}
		})
	}
	require.Equal(t, "lost lock x: context canceled", Mark(ErrLost, fmt.Errorf("lost lock x: %w", context.Canceled)).Error(), "a mark keeps the text")
}
