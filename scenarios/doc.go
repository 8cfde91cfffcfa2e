// Package scenarios turns the claims coordkit teaches into experiments that
// run in seconds and report what they observed next to what theory
// predicts: a verdict for each claim, the numbers, and a picture.
//
// A Registry holds scenarios by name; Default returns a new registry with
// every scenario coordkit ships. Each Scenario's Run gets an Env (progress
// writer, seed, scale, temporary directory, logger, optional etcd
// endpoints) and returns a *report.Report. Registry.Run fills in the name,
// seed, scale and elapsed time and sets the verdict.
//
// The scenarios of Default:
//
//	stale-read            a read from a cut-off follower; porcupine's verdict; readindex
//	quorum-loss           3 nodes, 2 crashed: writes stop, stale reads go on, nothing acked is lost
//	minority-partition    5 nodes split 2|3: the minority refuses, the majority goes on
//	even-split            3|3 of 6 stops everything; (N-1)/2 failures tolerated, N = 1..7
//	two-dc                2+1 over two sites vs 2+2+1 with a witness
//	write-cost            write latency against delay, fsync and size; read cost by mode
//	read-ladder           every read mode under a partition and under a paused leader
//	lock-without-fencing  a frozen lock holder's late write, with and without the token
//	leader-failover       crash and graceful failover on etcd; tokens; the deposed leader fenced
//	lamport-uniqueness    Lamport order is known too late to hand out a name; etcd CAS is not
//	two-phase-commit      2PC blocks on its coordinator; a decision through consensus does not
//	lamport-clocks        the clock rules, causality, and what vector clocks add
//
// The lab scenarios run package cluster in process; those on etcd start an
// embedded member (package internal/etcdembed) unless Env.EtcdEndpoints is
// set.
//
// What is guaranteed: every registered scenario states at least two claims
// (Register refuses fewer) and a report passes only when every claim holds.
// A scenario that cannot run (etcd would not start, say) returns an error
// instead of a failing report, so "the theory did not hold" and "the
// experiment broke" stay distinct.
//
// What is not: scenarios measure real time on a shared machine, so the
// figures vary from run to run; claims about latency are checked within a
// tolerance, and claims about safety (no lost write, one winner) are
// checked exactly. The same seed replays the same fault schedule, not the
// same timings.
package scenarios
