// Package sweep runs experiments at scale: a grid of parameters × values ×
// seeds, one trial per (point, seed), with bounded parallelism, a progress
// line with an estimate, results as JSON lines (resumable: a rerun skips
// the trials that finished) and CSV, a summary in the benchmarks' one table
// layout (internal/bench), and SVG charts (a CDF per point, or percentiles
// against a numeric parameter).
//
// The core is pure: Spec expands to Trials (Grid, Trials), Pending removes
// what a results file already holds, Summarize and CDF aggregate. Run is the
// driver: it opens one Fixture per point (a cluster, a check's setup) and
// runs that point's seeds on it in order.
//
// # What it guarantees
//
//   - Every trial of the grid runs exactly once across reruns: a trial whose
//     result line is in the results file is skipped; a trial that ended in
//     an error (the experiment could not measure) is run again.
//   - Results are appended one JSON line per trial as it finishes, so an
//     interrupted sweep loses at most the trials in flight.
//
// # What it does not promise
//
//   - Timing: trials that run in parallel share the CPUs, and on a loaded
//     machine a timing-sensitive result (an election's downtime, a commit's
//     latency) moves with the load. Parallel defaults to 1; a result is only
//     as honest as the machine it ran on, so quote the load with it.
//   - Independence: trials of one point share their fixture (the paper's
//     method for Figure 16: one cluster, its leader crashed repeatedly), so
//     one trial's aftermath can touch the next; each experiment says what it
//     resets between trials.
package sweep
