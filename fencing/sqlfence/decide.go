package sqlfence

import "github.com/coordkit/coordkit/fencing"

// outcome is what one run of the check statement means.
type outcome int

const (
	// admitted: the check updated the scope's row; the writes may run.
	admitted outcome = iota + 1
	// stale: the row exists with a floor above the token.
	stale
	// missing: the scope has no row yet; insert it at 0 and check again.
	missing
	// again: the check matched nothing, yet the row read afterwards admits
	// the token (it was inserted or changed between the two statements);
	// check again in a new transaction.
	again
	// broken: more than one row, or a negative count: the table is not
	// what this package created (no primary key on scope).
	broken
)

// decide turns the check's rows-affected count and the floor read after it
// in the same transaction (exists false if the scope had no row) into an
// outcome. Only one affected row admits; nothing else does.
func decide(rows int64, exists bool, floor, token fencing.Token) outcome {
	switch {
	case rows == 1:
		return admitted
	case rows != 0:
		return broken
	case !exists:
		return missing
	case floor > token:
		return stale
	default:
		return again
	}
}
