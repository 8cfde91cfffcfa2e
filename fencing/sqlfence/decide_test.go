package sqlfence

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/coordkit/coordkit/fencing"
)

func TestDecideTable(t *testing.T) {
	for _, tc := range []struct {
		name         string
		rows         int64
		exists       bool
		floor, token fencing.Token
		want         outcome
	}{
		{"updated", 1, false, 0, 5, admitted},
		{"no row", 0, false, 0, 5, missing},
		{"below floor", 0, true, 6, 5, stale},
		{"row appeared between check and read", 0, true, 0, 5, again},
		{"equal floor yet not updated", 0, true, 5, 5, again},
		{"two rows", 2, true, 1, 5, broken},
		{"negative count", -1, true, 1, 5, broken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := decide(tc.rows, tc.exists, tc.floor, tc.token); got != tc.want {
				t.Fatalf("decide(%d, %v, %d, %d) = %v, want %v", tc.rows, tc.exists, tc.floor, tc.token, got, tc.want)
			}
		})
	}
}

// The safety property: nothing but exactly one updated row admits, and
// "stale" is said only of a token below an existing floor.
func TestDecideProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rows := rapid.Int64Range(-2, 3).Draw(t, "rows")
		exists := rapid.Bool().Draw(t, "exists")
		floor := fencing.Token(rapid.Uint64Range(0, 100).Draw(t, "floor"))
		token := fencing.Token(rapid.Uint64Range(1, 100).Draw(t, "token"))
		got := decide(rows, exists, floor, token)
		if (got == admitted) != (rows == 1) {
			t.Fatalf("admitted=%v with %d rows", got == admitted, rows)
		}
		if got == stale && !(rows == 0 && exists && floor > token) {
			t.Fatalf("stale with rows=%d exists=%v floor=%d token=%d", rows, exists, floor, token)
		}
		if rows == 0 && exists && floor > token && got != stale {
			t.Fatalf("token %d below floor %d not stale: %v", token, floor, got)
		}
		if got == missing && (rows != 0 || exists) {
			t.Fatalf("missing with rows=%d exists=%v", rows, exists)
		}
		if (rows > 1 || rows < 0) != (got == broken) {
			t.Fatalf("rows=%d gave %v", rows, got)
		}
	})
}

func TestStatements(t *testing.T) {
	for _, tc := range []struct {
		d     Dialect
		check string
	}{
		{Postgres, "UPDATE f SET token = $1, writes = writes + 1 WHERE scope = $2 AND token <= $3"},
		{MySQL, "UPDATE f SET token = ?, writes = writes + 1 WHERE scope = ? AND token <= ?"},
		{SQLite, "UPDATE f SET token = ?, writes = writes + 1 WHERE scope = ? AND token <= ?"},
	} {
		if got := tc.d.statements("f").check; got != tc.check {
			t.Errorf("%v: check = %q, want %q", tc.d, got, tc.check)
		}
	}
}
