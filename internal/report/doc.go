// Package report holds what coordctl prints about locks, semaphores and
// elections: the held lines, the status of a name, the events of a
// campaign and of an observer, the queue of candidates. Their JSON form is
// coordctl's stable contract (one object per line for streams); String is
// the readable line. The library packages (lock, semaphore, election) hold
// none of this: they return values, and the commands (and the sidecar)
// print them through this package.
package report
