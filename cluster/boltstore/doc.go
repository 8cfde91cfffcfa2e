// Package boltstore keeps a hashicorp/raft log and stable store in one
// go.etcd.io/bbolt file. A *Store is a raft.LogStore, a raft.StableStore and
// an io.Closer, shaped like github.com/hashicorp/raft-boltdb: bucket "logs"
// maps big-endian uint64 indexes to encoded raft.Log entries, bucket "conf"
// holds the stable store's values as given (SetUint64 stores 8 big-endian
// bytes).
//
// It exists because raft-boltdb v1 sits on github.com/boltdb/bolt, which is
// abandoned and trips Go's checkptr (on under -race) when it opens a file;
// bbolt is its maintained fork, and what etcd runs on.
//
// # What it guarantees
//
//   - Durability: every write (StoreLog, StoreLogs, DeleteRange, Set,
//     SetUint64) is one bbolt read-write transaction, and bbolt fsyncs the
//     file when it commits; the call returns after the fsync. NoSync is
//     never set. A batch from StoreLogs is all-or-nothing: after a crash
//     either every entry of it is there or none is.
//   - A missing log index gives raft.ErrLogNotFound; a missing stable key
//     gives ErrKeyNotFound, whose message is exactly "not found" because
//     hashicorp/raft compares err.Error() with that string (NewRaft,
//     HasExistingState, vote handling) to tell "never written" from a
//     failure.
//   - Values returned by Get and the Data and Extensions of a log read by
//     GetLog are copies: they stay valid after the transaction and the
//     store are gone.
//   - One opener per file: bbolt holds an exclusive flock while the store is
//     open, and Open gives up after the lock timeout (WithLockTimeout,
//     DefaultLockTimeout) with an error wrapping ErrLocked, instead of
//     waiting for ever. This holds between processes and between two Opens
//     in one process.
//
// # Log encoding
//
// A log value is a version byte (1) followed by uvarint Index, uvarint Term,
// one byte Type, uvarint length and bytes of Data, uvarint length and bytes
// of Extensions, then one flag byte: 0 for a zero AppendedAt, or 1 followed by
// varint Unix seconds and uvarint nanoseconds. It is a fixed, reflection-free
// format with no dependency; raft-boltdb's msgpack values are not read
// (decoding one fails with ErrCorrupt, since msgpack maps start with 0x8_).
//
// # What it does not promise
//
//   - Files written by raft-boltdb are not readable as logs (the "conf"
//     bucket would be, the "logs" values are not): this is a new format, not
//     a migration path.
//   - AppendedAt comes back to the nanosecond but in time.Local, without a
//     monotonic reading; Data and Extensions of length zero come back nil.
//   - No cache: every read is a read transaction on the memory-mapped file
//     (wrap it in raft.NewLogCache if reads of recent entries matter).
//   - Nothing is checksummed beyond what bbolt does (its meta pages); a value
//     that does not decode is reported as ErrCorrupt, silent bit flips inside
//     Data are not detected.
package boltstore
