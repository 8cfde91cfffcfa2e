// Package sqlcli is 'coordctl sql', 'sql fence' and 'sql floor': the
// commands (NewCmd), and what they do (Run, a plain function the tests call)
// on top of fencing/sqlfence: check the connection flags, open the
// database within --command-timeout, run the -e statements after the fence
// check in one transaction (refusing transaction control before anything
// runs), raise or read a floor, and say what the outcome was.
//
// Run returns a Result whose JSON is the commands' stable contract, or an
// error that says what happened to the transaction:
//
//   - *fencing.StaleError (fencing.ErrStale): the token is below the floor;
//     nothing was committed.
//   - *OutcomeError, matching sqlfence.ErrCommitUnknown or
//     sqlfence.ErrOutsideFence: COMMIT was sent and its answer lost, or
//     statements ran outside the fenced transaction. The writes and the
//     floor may have been committed; read them before retrying. Its JSON is
//     what 'coordctl sql -w json' prints then.
//   - a *cmdutil.UsageError: a flag is wrong (exit 2); its text names the
//     flag as coordctl spells it.
//   - ErrInterrupted: the context was cancelled; nothing was committed.
//   - sqlfence.ErrNotTransactional: the MySQL/MariaDB fence table is not
//     InnoDB; refused before any statement ran.
//   - sqlfence.ErrFenceMoved: a statement rewrote the scope's fence row;
//     rolled back.
//   - anything else: the transaction was rolled back (or never began):
//     nothing was committed in transactional tables, and the floor did not
//     move. A MySQL table that is not transactional (MyISAM, Aria) keeps
//     what a statement wrote to it; the error says so rather than "nothing
//     was committed".
//
// Errors never show a DSN's password, nor any of a DSN that cannot be
// parsed (sqlfence.RedactDSN, sqlfence.Scrub), and never wrap
// context.DeadlineExceeded (a deadline is "no answer within
// --command-timeout", not etcd's silence).
//
// What it does not promise is sqlfence's: only the statements run in the
// transaction are fenced; a floor read is outdated as soon as it returns.
// The package opens the three drivers it supports (pgx, go-sql-driver/mysql,
// modernc.org/sqlite).
//
// It is named sqlcli, not sql, so that it does not shadow database/sql
// where both are imported; its directory is internal/cmd/sql.
package sqlcli
