// Package bench holds what coordctl's benchmark harnesses share: the one
// participant interface every harness measures through (Locker, with
// CoordkitMutex and EtcdMutex for the two mutexes), a run's etcd clients
// and fresh names (Clients), the result table every bench command prints
// (Table, Row, Ratio, WriteTable) and the statistics they quote
// (Percentile, Ms).
//
// The harnesses are its subpackages, one per subject, each with
// Run(ctx, Options) (Result, error): lockbench (coordkit's lock against
// etcd's concurrency.Mutex, and redsync), rwlockbench (coordkit's
// read-write lock against etcd's recipes.RWMutex), sembench (coordkit's
// semaphore against concurrency.Mutex at limit 1), electbench (coordkit's
// election against concurrency.Election), labbench (the Raft lab against
// bare hashicorp/raft and against docs/lab.md's latency model), sqlbench (a
// SQL transaction with fencing/sqlfence's check against the same without)
// and scalebench (how the cost grows with waiters, locks and candidates;
// its charts are drawn by package chart). A Result's JSON form is the -w
// json contract; its Table method gives the text form, and Printed is
// what a bench command prints of it (the result as JSON, its tables as
// text). What a command needs beyond Run lives in the harness's cmd.go
// (scalebench's Selection, ReadResults and WriteSVGFile; labbench's
// WithModeDefaults; electbench's rolling Printed and WriteHTMLFile).
//
// Figures depend on the machine: these machines are shared and noisy, so a
// harness measures every implementation side by side in one run and the
// figure to quote is the ratio. Nothing here promises a figure; tests of the
// harnesses assert shapes, counts and lower bounds only.
package bench
