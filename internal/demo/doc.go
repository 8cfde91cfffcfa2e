// Package demo is `coordctl demo`, the guided tour: the lock story (the
// recorded steps of the scenario lock-without-fencing, a frozen holder's
// late write refused by the fenced resource and accepted by the unfenced
// one), then the tour's experiments (that scenario's verdicts,
// fenced-sql, minority-partition, write-cost), each with a paragraph on
// what to look for and an HTML report written to Config.Out.
//
// Run hands each step, each stop and the closing line to the caller as an
// Event, which prints it (as text with WriteText, or as JSON); progress
// goes to Config.Progress.
//
// What is guaranteed: the story is a real run, not a recording; if its
// fenced resource accepted the late write, Run stops with
// ErrFencedAccepted before the tour. Every stop of the tour runs even if
// one's claim fails; Run then returns ErrClaimFailed at the end. Whatever
// Run starts (etcd, resources, clusters) is stopped, and a DataDir it made
// is removed.
//
// What is not: the experiments measure real time, so a timing claim (the
// write-cost model) can miss on a loaded machine; the story's safety
// claims cannot.
package demo
