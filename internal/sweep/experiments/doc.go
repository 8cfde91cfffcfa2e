// Package experiments is what `coordctl lab sweep` and `coordctl lab
// figure16` run on the internal/sweep engine: the one table of experiments
// (election, scenario, lock-safety, election-safety), each reading a
// sweep.Point into its own config and measuring a trial as named numbers;
// Sweep, which runs a spec's pending trials resumably (a JSON-lines results
// file, skipped on a rerun) and summarises them as a Report; and Figure16,
// the Raft paper's Figure 16 (bottom panel) as a set of election sweeps and
// its tables, points and CDFs.
//
// It lives beside internal/sweep, not in it, so that the engine stays pure
// and knows no experiment: this package is the one that imports the lab
// (scenarios), the safety checks (internal/safety) and an embedded etcd.
//
// What is guaranteed: a point that an experiment cannot read (an unknown
// parameter, a value its config's Validate refuses) is refused by
// CheckParams and CheckPoints before anything runs, with an error wrapping
// sweep.ErrSpec or ErrUnknownParam; the rest of sweep's guarantees (every
// trial once across reruns, results appended as trials finish) hold.
//
// What is not: timing. Figure 16's downtimes are timer races on a shared
// machine; the report quotes the load average at the start and the end,
// and a loaded machine lengthens them.
package experiments
