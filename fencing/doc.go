// Package fencing makes a protected resource reject the writes of a lock
// holder that no longer holds the lock.
//
// Every holder of a lock or leadership gets a Token that grows from holder
// to holder (coordkit uses the create revision of the holder's key in etcd).
// A scope names the holders that exclude each other: coordkit's are where
// the held key lives in etcd (lock.Held.Scope, semaphore.Held.Scope,
// election.Leadership.Scope: the key prefix PREFIX+NAME/, or a slot's key);
// this package compares scopes as opaque strings. The resource keeps per scope the
// highest token it has admitted, the floor: a request whose token is below
// the floor is rejected (*StaleError, ErrStale); a token at or above it is
// admitted and raises the floor. A holder that paused, was partitioned or sat
// behind a slow disk while its lease expired therefore cannot overwrite the
// work of its successor once the successor has written or fenced.
//
// The package has three layers:
//
//   - Guard: the pure decision, per-scope floors in memory. No I/O, safe for
//     concurrent use, usable by any Go service in front of its own store.
//     Check computes an admission without applying it and Apply applies it,
//     so a durable layer can persist first and apply after; AdmitFunc does
//     check, commit and apply atomically.
//   - DurableGuard: a Guard whose raised floors are appended to a log file
//     and fsynced before Admit returns, so a restart does not reopen the hole.
//   - Resource and Client: a small durable key-value store served over HTTP
//     that checks tokens (PUT /v1/kv/{key}, GET /v1/kv/{key}, POST /v1/fence,
//     GET /v1/log), with If-Match and Idempotency-Key, and its Go client.
//     docs/fencing.md describes the API. ResourceConfig.Unfenced gives the
//     same store without the check, as a baseline. Serve serves a Resource
//     on a listener (StartLocal on a free loopback port); NewClient makes a
//     Client from a ClientConfig. The answers' WriteText is the text form
//     'coordctl resource' prints.
//
// What is guaranteed: a token below a scope's floor is never admitted; a
// floor never goes down, also across a restart, for every admission or write
// whose success was returned or acknowledged (it was fsynced first, and the
// directory entry of a new log file too). Replay at open cuts off a torn final
// record — a partial header, or one whose length runs past the end of the
// file — and reports any other damaged record, including a full-length final
// record with a bad checksum and a zero-filled one, as a *CorruptError
// (ErrCorrupt) instead of guessing. Repair drops the damage; since a damaged
// record's scope and token cannot be trusted, it needs a bound no granted
// token exceeds (etcd's current revision) and raises the floor of every
// scope, named or not, to it (Guard.RaiseAll), so a floor does not go down;
// without a bound it refuses (ErrRepairNeedsBound).
//
// What is not: fencing protects only what checks the token. A resource that
// is written around the Guard, or a side effect outside it (an email sent, a
// file written elsewhere), is not fenced. Two holders with the same token
// (the same holder retrying) are both admitted: equal tokens pass. The floor
// does not tell a new holder whether its predecessor's last write landed; use
// the audit log (GET /v1/log) or If-Match for that. Repair loses the writes
// it drops.
// Floors and writes are kept in memory and the logs are not compacted
// (DurableGuard compacts its log at open); this is a reference resource,
// not a database. Counts of rejected requests are appended without fsync and
// may lose the last few in a crash.
package fencing
