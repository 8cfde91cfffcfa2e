package sqlfence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// TestCommitRefused: only an answer that says for certain that nothing was
// committed counts as refused; a PostgreSQL FATAL (the server shutting down
// as it commits) may come after the commit was made durable, so its
// outcome is unknown.
func TestCommitRefused(t *testing.T) {
	cases := []struct {
		name string
		d    Dialect
		err  error
		want bool
	}{
		{"tx done", Postgres, sql.ErrTxDone, true},
		{"pg ERROR", Postgres, &pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "40001"}, true},
		{"pg ERROR localized only", Postgres, &pgconn.PgError{Severity: "ERROR", Code: "23505"}, true},
		{"pg ERROR wrapped", Postgres, fmt.Errorf("commit: %w", &pgconn.PgError{SeverityUnlocalized: "ERROR", Code: "40P01"}), true},
		{"pg FATAL admin shutdown", Postgres, &pgconn.PgError{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "57P01"}, false},
		{"pg FATAL localized", Postgres, &pgconn.PgError{Severity: "SCHWERWIEGEND", SeverityUnlocalized: "FATAL", Code: "57P01"}, false},
		{"pg PANIC", Postgres, &pgconn.PgError{SeverityUnlocalized: "PANIC", Code: "XX000"}, false},
		{"pg error without severity", Postgres, sqlStateOnly("40001"), true},
		{"timeout", Postgres, context.DeadlineExceeded, false},
		{"closed connection", Postgres, errors.New("unexpected EOF"), false},
		{"pg error on mysql", MySQL, &pgconn.PgError{SeverityUnlocalized: "ERROR", Code: "40001"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, commitRefused(tc.d, tc.err))
		})
	}
}

type sqlStateOnly string

func (s sqlStateOnly) Error() string    { return "sqlstate " + string(s) }
func (s sqlStateOnly) SQLState() string { return string(s) }
