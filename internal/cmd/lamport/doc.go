// Package lamportcmd implements coordctl lamport: Lamport clocks and vector
// clocks on a scripted history.
//
// It is named lamportcmd, not lamport, because it imports the library
// package lamport; its directory is internal/cmd/lamport.
package lamportcmd
