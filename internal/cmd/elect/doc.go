// Package electcmd implements coordctl elect: campaign for leadership of an
// election (print the token or run a command while leading), observe it,
// list its candidates, or step down.
//
// It is named electcmd, not elect, beside the library package election it
// imports; its directory is internal/cmd/elect.
package electcmd
