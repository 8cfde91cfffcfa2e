// Package lockcmd implements coordctl lock (hold a fenced lock, print its
// token or run a command while holding it) and coordctl lock status.
//
// It is named lockcmd, not lock, because it imports the library package
// lock; its directory is internal/cmd/lock.
package lockcmd
