// Package sqlcli implements coordctl sql: run SQL statements fenced by a
// token inside the database's own transaction (exec, floor, fence).
//
// It is named sqlcli because internal/sqlcmd, which it imports, is the
// fenced statement runner itself; its directory is internal/cmd/sql.
package sqlcli
