// Package semcmd implements coordctl sem (hold one of N slots of a fenced
// semaphore), sem status, sem set-limit and sem delete.
//
// It is named semcmd, not sem, after the library package semaphore it
// imports (and the other command packages, named <library>cmd); its
// directory is internal/cmd/sem.
package semcmd
