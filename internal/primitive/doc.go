// Package primitive is what lock, semaphore and election share and no user
// of them needs to see: their one configuration (Config, with the rules in
// Validate: name, TTL, lock delay, limit), the key layout of every
// primitive under a name (RoleOf, ValidateName), the session source of a
// handle (Lazy, Serially), and a read of who holds and waits for a lock or
// a semaphore (ReadLock, ReadSemaphore).
//
// It sits below the three public packages; internal/depcheck allows public
// packages to import exactly this internal package. coordctl uses Config to
// check its flags before it dials, and the reads for its status commands.
package primitive
