// Package labbench measures the Raft lab against bare hashicorp/raft and
// against the latency model of docs/lab.md.
//
// Run without Options.Model compares throughput, in the same run and
// process: lab writes (through the lab's client, simulated transport and
// history) against writes applied directly to bare raft.Raft nodes on
// raft's InmemTransport with the same state machine, node count and
// timeouts, the two alternating in 250ms slices so that load hits both
// alike. With Options.Model it runs sequential writes with a one-way link
// delay d and a simulated fsync latency f and compares the median with the
// model 2d + 2f (the leader persists before it replicates; then one
// follower round trip with the follower's persist; then apply). Figures
// depend on the machine; compare within one run.
package labbench
