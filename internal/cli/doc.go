// Package cli implements coordctl's commands with cobra. Every command is a
// constructor newXCmd(f *factory) with an options struct; its RunE calls a
// plain run function that tests call directly. All output goes through the
// streams and the printer the factory injects; exit codes are decided in one
// place, exitCode, which reads the error a command returns against one table
// (exit.go): commands return meaningful errors and never pick a number,
// except a child's own status passed through (childExitError).
package cli
