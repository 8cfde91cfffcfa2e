package cli

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
		{"nil", nil, exitOK, false},
		{"plain error", errors.New("boom"), exitError, false},
		{"usage", usageErrorf("bad --x"), exitUsage, false},
		{"interrupted", fmt.Errorf("wait: %w", context.Canceled), exitOK, false},
		{"lock held by another", fmt.Errorf("try: %w", lock.ErrLocked), exitNotAcquired, false},
		{"not acquired in time", mark(errNotAcquired, errors.New("lock x not acquired within 1s")), exitNotAcquired, false},
		{"lost", mark(errLost, fmt.Errorf("lost lock x: %w", context.Canceled)), exitLost, false},
		{"lost, reported", reported(errLost), exitLost, true},
		{"stale", fmt.Errorf("put: %w", stale), exitStale, false},
		{"stale, reported", reported(stale), exitStale, true},
		{"commit outcome unknown", fmt.Errorf("sql: %w", sqlfence.ErrCommitUnknown), exitUnknown, false},
		{"outside the fence", fmt.Errorf("sql: %w", sqlfence.ErrOutsideFence), exitUnknown, false},
		{"unknown, though interrupted", mark(errUnknown, context.Canceled), exitUnknown, false},
		{"failed although canceled", reported(mark(errFailed, context.Canceled)), exitError, true},
		{"child status", &childExitError{code: 42}, 42, true},
		{"child status 0", &childExitError{code: 0}, exitOK, true},
		{"child not found", &childStartError{err: fmt.Errorf("start: %w", exec.ErrNotFound)}, exitCommandNotFound, false},
		{"child path missing", &childStartError{err: fmt.Errorf("start: %w", os.ErrNotExist)}, exitCommandNotFound, false},
		{"child not executable", &childStartError{err: os.ErrPermission}, exitCannotExecute, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.code, exitCode(tc.err))
			if tc.err != nil {
				require.Equal(t, tc.silent, silent(tc.err))
			}
		})
	}
	require.Equal(t, "lost lock x: context canceled", mark(errLost, fmt.Errorf("lost lock x: %w", context.Canceled)).Error(), "a mark keeps the text")
}
