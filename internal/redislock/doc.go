// Package redislock is coordkit's adapter for the lock people use instead
// of etcd: a Redis lock taken with github.com/go-redsync/redsync/v4 over a
// github.com/redis/go-redis/v9 client. It exists so that benchmarks and
// safety checks can put the real thing next to coordkit's lock, on the same
// work, in the same run; coordkit's own code never locks with it.
//
// Redsync is one lock name on one client: Acquire takes the lock with
// redsync's retry loop (SET NX PX, then a retry delay, up to its tries) and
// returns the function that releases it; Extend pushes the current
// holding's expiry forward. Keyspace gives every run its own random key
// prefix and deletes every key under it at the end, because the Redis
// server is shared by every run on the machine. Dial connects and pings
// within a dial timeout, so that an address nobody answers on is reported
// quickly and by name.
//
// What is guaranteed is what redsync guarantees, and no more: while the
// key has not expired on the server, no other Acquire on the same name
// succeeds. Nothing here gives a fencing token, so a holder that is paused
// past its expiry (a GC pause, SIGSTOP, a slow network) does not learn that
// it lost the lock before it writes, and a resource cannot tell it from the
// current holder; Until says when the holder's own estimate of its validity
// ends, measured on its own clock. No auto-extension is done: a holder that
// wants to keep the lock calls Extend before Until. Waiters poll with
// redsync's retry delay (by default a random 50..250ms); nothing wakes them
// when the lock is released, and nothing makes the order fair. Keyspace's
// Cleanup uses SCAN and works on a single Redis server, not a cluster.
package redislock
