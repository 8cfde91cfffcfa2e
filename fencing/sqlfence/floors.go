package sqlfence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/coordkit/coordkit/fencing"
)

// HighestFloor returns the scope with the highest floor in the fence table
// and that floor; "" and 0 when no scope was admitted. Of equal floors the
// smallest scope wins. It is what an operator needs after etcd was
// restored from a snapshot or rebuilt: the restored cluster's revision
// must be bumped above it (docs/operations.md). A plain read, like Floor.
func (f *Fence) HighestFloor(ctx context.Context) (string, fencing.Token, error) {
	if err := f.ensureTable(ctx); err != nil {
		return "", 0, err
	}
	q := fmt.Sprintf("SELECT scope, token FROM %s ORDER BY token DESC, scope ASC LIMIT 1", f.table)
	var scope []byte
	var floor int64
	err := f.db.QueryRowContext(ctx, q).Scan(&scope, &floor)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", 0, nil
	case err != nil:
		return "", 0, fmt.Errorf("sqlfence: read the highest floor: %w", err)
	case floor < 0:
		return "", 0, fmt.Errorf("%w: negative floor %d for scope %q", ErrBadTable, floor, scope)
	}
	return string(scope), fencing.Token(floor), nil
}
