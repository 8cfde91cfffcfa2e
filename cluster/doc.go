// Package cluster is the Raft lab: 1 to 7 real hashicorp/raft nodes in one
// process, joined by a simulated network that the caller controls, with a
// key-value state machine, a client that finds the leader, five read modes,
// node faults, a recorded history checked by porcupine, and a timeline.
//
// # What it guarantees
//
//   - The network is per directed link: one-way delay and jitter (real
//     time: the lab measures what they cost), loss, and cuts. A message on
//     a cut link is dropped, including one in flight. Each link delivers in
//     order, as TCP would, and a slow link never holds up another.
//     Partitions are sets of cuts; one-way cuts are possible; Heal removes
//     every cut and keeps delays.
//   - The transport is a raft.Transport of its own (pipelined
//     AppendEntries, heartbeat fast path, InstallSnapshot, TimeoutNow,
//     pre-vote), so Raft runs its real code paths over the simulated links.
//   - Crash stops a node; its log, stable store and snapshots survive and
//     Restart starts it on them. Pause freezes a node: it neither sends,
//     receives nor applies, Raft's goroutines stop at their next message or
//     log line, and client requests that reach it wait and are served on
//     resume with the state it had — the process-pause hazard of leases.
//   - Storage is in memory, a bbolt file with fsync (cluster/boltstore), or in
//     memory with a simulated fsync latency.
//   - Every client operation is recorded with call and return times on one
//     monotonic clock and an outcome: ok, fail (certainly not applied) or
//     unknown (may have been applied, now or later). CheckHistory checks the
//     history with porcupine against a key-partitioned model.
//   - The read ladder: stale (asked node's local state), lease (leader's
//     local state, trusting it still leads), verify (VerifyLeader, then
//     local state), readindex (the thesis's ReadIndex: commit index once
//     the leader committed in its term, a quorum round of the lab's own
//     confirming no later term, wait until applied), log (through the
//     log). Only readindex and log are linearizable.
//   - A seed fixes jitter, loss, the clients' choices of node and the
//     generated workloads.
//
// # What it does not promise
//
//   - Runs are not bit-for-bit deterministic: Raft's own timers and Go's
//     scheduler are real. A seed replays the lab's decisions, not Raft's
//     election timing.
//   - Raft's timeouts are fixed at start (scaled with the configured link
//     delay); raising a link's delay well past a tenth of the heartbeat
//     timeout afterwards causes leader churn — which is itself a lesson.
//   - The client's "unknown" is honest: a forwarded write whose answer was
//     lost is unknown even if the lab could tell it was never delivered.
package cluster
