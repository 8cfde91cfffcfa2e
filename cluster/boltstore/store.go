package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// DefaultLockTimeout is how long Open waits for another opener of the same
// file to let go before it fails with ErrLocked.
const DefaultLockTimeout = time.Second

// fileMode is used only when Open creates the file.
const fileMode = 0o600

var (
	bucketLogs = []byte("logs")
	bucketConf = []byte("conf")
)

var (
	// ErrKeyNotFound is returned by Get and GetUint64 for a key never set.
	// Its message is "not found", without the package prefix, because
	// hashicorp/raft matches that exact string (as raft-boltdb's and raft's
	// InmemStore's errors read).
	ErrKeyNotFound = errors.New("not found")
	// ErrLocked is wrapped by Open when another opener holds the file past
	// the lock timeout.
	ErrLocked = errors.New("boltstore: file locked by another opener")
	// ErrCorrupt is wrapped by GetLog and GetUint64 when a stored value
	// does not decode.
	ErrCorrupt = errors.New("boltstore: corrupt value")
)

// Store is a raft log and stable store in one bbolt file. Its methods are
// safe for concurrent use; bbolt serializes writers.
type Store struct {
	db   *bolt.DB
	path string
}

var (
	_ raft.LogStore    = (*Store)(nil)
	_ raft.StableStore = (*Store)(nil)
	_ io.Closer        = (*Store)(nil)
)

type options struct {
	lockTimeout time.Duration
}

// Option configures Open.
type Option func(*options)

// WithLockTimeout sets how long Open waits for the file lock; d <= 0 means
// DefaultLockTimeout (bbolt's own "0 waits for ever" is not offered).
func WithLockTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.lockTimeout = d
		}
	}
}

// Open opens or creates the bbolt file at path and its buckets. The file's
// directory must exist. It returns an error wrapping ErrLocked if another
// opener holds the file for longer than the lock timeout.
func Open(path string, opts ...Option) (*Store, error) {
	o := options{lockTimeout: DefaultLockTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	db, err := bolt.Open(path, fileMode, &bolt.Options{Timeout: o.lockTimeout})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s (waited %v)", ErrLocked, path, o.lockTimeout)
	}
	if err != nil {
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketLogs, bucketConf} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("boltstore: init %s: %w", path, err)
	}
	return &Store{db: db, path: path}, nil
}

// Path is the file the store was opened on.
func (s *Store) Path() string { return s.path }

// Close releases the file and its lock. What was committed stays on disk.
func (s *Store) Close() error { return s.db.Close() }

// FirstIndex returns the lowest stored log index, 0 if the log is empty.
func (s *Store) FirstIndex() (uint64, error) {
	var idx uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket(bucketLogs).Cursor().First(); k != nil {
			idx = binary.BigEndian.Uint64(k)
		}
		return nil
	})
	return idx, err
}

// LastIndex returns the highest stored log index, 0 if the log is empty.
func (s *Store) LastIndex() (uint64, error) {
	var idx uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket(bucketLogs).Cursor().Last(); k != nil {
			idx = binary.BigEndian.Uint64(k)
		}
		return nil
	})
	return idx, err
}

// GetLog reads the entry at index into log. It returns raft.ErrLogNotFound
// if there is none, an error wrapping ErrCorrupt if it does not decode.
func (s *Store) GetLog(index uint64, log *raft.Log) error {
	return s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketLogs).Get(indexKey(index))
		if v == nil {
			return raft.ErrLogNotFound
		}
		if err := decodeLog(v, log); err != nil {
			return fmt.Errorf("%w: log %d: %w", ErrCorrupt, index, err)
		}
		return nil
	})
}

// StoreLog stores one entry, durably.
func (s *Store) StoreLog(log *raft.Log) error {
	return s.StoreLogs([]*raft.Log{log})
}

// StoreLogs stores the entries in one transaction, hence one fsync: all of
// them or, on error, none. An entry at an existing index replaces it.
func (s *Store) StoreLogs(logs []*raft.Log) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketLogs)
		var buf []byte
		for _, l := range logs {
			// bbolt keeps a reference to the value until commit, so each
			// entry gets its own slice.
			buf = appendLog(make([]byte, 0, encodedSize(l)), l)
			if err := b.Put(indexKey(l.Index), buf); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeleteRange deletes the entries with min <= index <= max, durably.
func (s *Store) DeleteRange(min, max uint64) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketLogs).Cursor()
		// Seek again after every delete rather than Next: what Next does
		// after Delete depends on whether the cursor is on a page or on a
		// node bbolt has already copied for writing, which is not a
		// contract.
		for k, _ := c.Seek(indexKey(min)); k != nil; k, _ = c.Seek(indexKey(min)) {
			if binary.BigEndian.Uint64(k) > max {
				break
			}
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
}

// Set stores val under key, durably.
func (s *Store) Set(key, val []byte) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketConf).Put(key, val)
	})
}

// Get returns a copy of the value under key, or ErrKeyNotFound.
func (s *Store) Get(key []byte) ([]byte, error) {
	var val []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketConf).Get(key)
		if v == nil {
			return ErrKeyNotFound
		}
		val = append([]byte{}, v...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return val, nil
}

// SetUint64 stores val under key as 8 big-endian bytes, durably.
func (s *Store) SetUint64(key []byte, val uint64) error {
	return s.Set(key, binary.BigEndian.AppendUint64(nil, val))
}

// GetUint64 returns the value SetUint64 stored under key, or
// ErrKeyNotFound, or an error wrapping ErrCorrupt if the value is not 8
// bytes long.
func (s *Store) GetUint64(key []byte) (uint64, error) {
	v, err := s.Get(key)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: key %q holds %d bytes, want 8", ErrCorrupt, key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

func indexKey(i uint64) []byte { return binary.BigEndian.AppendUint64(nil, i) }
