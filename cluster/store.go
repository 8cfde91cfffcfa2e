package cluster

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/coordkit/coordkit/cluster/boltstore"
)

// nodeStore is what a node persists; it outlives crashes of the node.
type nodeStore struct {
	logs   raft.LogStore
	stable raft.StableStore
	snaps  raft.SnapshotStore
	closer io.Closer // the bolt store, reopened on restart
	path   string
}

func openStore(cfg Config, dir string, id NodeID) (*nodeStore, error) {
	switch cfg.Storage {
	case StorageDisk:
		nd := filepath.Join(dir, "node"+id.String())
		if err := os.MkdirAll(nd, 0o755); err != nil {
			return nil, fmt.Errorf("cluster: node %d data dir: %w", id, err)
		}
		s := &nodeStore{path: nd}
		snaps, err := raft.NewFileSnapshotStore(nd, 2, io.Discard)
		if err != nil {
			return nil, fmt.Errorf("cluster: node %d snapshots: %w", id, err)
		}
		s.snaps = snaps
		if err := s.reopen(); err != nil {
			return nil, err
		}
		return s, nil
	case StorageSimFsync:
		mem := raft.NewInmemStore()
		w := &slowStore{mem: mem, latency: cfg.FsyncLatency}
		return &nodeStore{logs: w, stable: w, snaps: raft.NewInmemSnapshotStore()}, nil
	default:
		mem := raft.NewInmemStore()
		return &nodeStore{logs: mem, stable: mem, snaps: raft.NewInmemSnapshotStore()}, nil
	}
}

// reopen opens the bolt file again after a crash closed it.
func (s *nodeStore) reopen() error {
	if s.path == "" || s.closer != nil {
		return nil
	}
	b, err := boltstore.Open(filepath.Join(s.path, "raft.db"))
	if err != nil {
		return fmt.Errorf("cluster: open %s: %w", s.path, err)
	}
	s.logs, s.stable, s.closer = b, b, b
	return nil
}

// release closes the bolt file; what was fsynced stays on disk.
func (s *nodeStore) release() {
	if s.closer != nil {
		_ = s.closer.Close()
		s.closer = nil
	}
}

// slowStore is an in-memory log and stable store that sleeps a simulated
// fsync latency on every write, as a disk that syncs would.
type slowStore struct {
	mem     *raft.InmemStore
	latency time.Duration
}

var (
	_ raft.LogStore    = (*slowStore)(nil)
	_ raft.StableStore = (*slowStore)(nil)
)

func (s *slowStore) sync() {
	if s.latency > 0 {
		time.Sleep(s.latency)
	}
}

func (s *slowStore) FirstIndex() (uint64, error)        { return s.mem.FirstIndex() }
func (s *slowStore) LastIndex() (uint64, error)         { return s.mem.LastIndex() }
func (s *slowStore) GetLog(i uint64, l *raft.Log) error { return s.mem.GetLog(i, l) }
func (s *slowStore) DeleteRange(min, max uint64) error  { return s.mem.DeleteRange(min, max) }
func (s *slowStore) Get(k []byte) ([]byte, error)       { return s.mem.Get(k) }
func (s *slowStore) GetUint64(k []byte) (uint64, error) { return s.mem.GetUint64(k) }
func (s *slowStore) StoreLog(l *raft.Log) error         { return s.StoreLogs([]*raft.Log{l}) }
func (s *slowStore) StoreLogs(ls []*raft.Log) error {
	err := s.mem.StoreLogs(ls)
	s.sync()
	return err
}
func (s *slowStore) Set(k, v []byte) error {
	err := s.mem.Set(k, v)
	s.sync()
	return err
}
func (s *slowStore) SetUint64(k []byte, v uint64) error {
	err := s.mem.SetUint64(k, v)
	s.sync()
	return err
}

// StoredNodes returns the size of the cluster whose disk store is in dir:
// the highest N with a dir/nodeN/raft.db, 0 for none (or no dir).
func StoredNodes(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("cluster: data dir: %w", err)
	}
	n := 0
	for _, e := range entries {
		id, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "node"))
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "node") || err != nil || id < 1 {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "raft.db")); err == nil {
			n = max(n, id)
		}
	}
	return n, nil
}
