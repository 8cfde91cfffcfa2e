// Package lamportcmd implements coordctl lamport: replay a trace of events
// under Lamport clocks and print the order and the clocks.
//
// It is named lamportcmd, not lamport, because it imports the library
// package lamport; its directory is internal/cmd/lamport.
package lamportcmd
