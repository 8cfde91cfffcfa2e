package sqlfence_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/fencing/sqlfence/sqltest"
)

func TestHighestFloor(t *testing.T) {
	sqltest.Each(t, func(t *testing.T, db *sqltest.DB) {
		ctx := testCtx(t)
		f := newFence(t, db)
		scope, floor, err := f.HighestFloor(ctx)
		require.NoError(t, err)
		require.Empty(t, scope)
		require.Zero(t, floor)

		for _, a := range []struct {
			scope string
			token fencing.Token
		}{{"jobs/a", 40}, {"jobs/b", 9000}, {"jobs/c", 9000}, {"jobs/d", 7}} {
			require.NoError(t, f.Fence(ctx, a.scope, a.token))
		}
		scope, floor, err = f.HighestFloor(ctx)
		require.NoError(t, err)
		require.Equal(t, "jobs/b", scope, "of equal floors the smallest scope")
		require.Equal(t, fencing.Token(9000), floor)
	})
}
