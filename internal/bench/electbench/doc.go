// Package electbench measures coordkit's election against etcd's
// concurrency.Election (what etcdctl elect uses), side by side in one run
// on one embedded single-member etcd that it starts in a temporary
// directory.
//
// Run measures, per implementation: the handover from a resigning leader
// to the next candidate's Campaign returning, when the candidate had just
// queued (median and p99) and when it had waited 200ms (median), and the
// failover after a leader stops its keepalives without revoking its lease
// (TTL 2s, median). The figures depend on the machine and its load;
// compare the two columns of one run, not runs. Nothing here checks that
// one leader at a time holds office: the election's tests do.
package electbench
