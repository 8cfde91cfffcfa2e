// Package benchcmd implements coordctl bench: benchmarks of locks,
// read-write locks, semaphores, elections, fenced SQL, the Raft lab and
// scale, each printing a table.
//
// It is named benchcmd, not bench, because it imports internal/bench, the
// harnesses; its directory is internal/cmd/bench.
package benchcmd
