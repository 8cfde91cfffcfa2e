package boltstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

func openTemp(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "raft.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func testLog(i uint64) *raft.Log {
	return &raft.Log{
		Index:      i,
		Term:       i/10 + 1,
		Type:       raft.LogCommand,
		Data:       []byte(fmt.Sprintf("data-%d", i)),
		Extensions: []byte{byte(i)},
		AppendedAt: time.Unix(1_700_000_000+int64(i), int64(i)*1000),
	}
}

func requireSameLog(t *testing.T, want, got *raft.Log) {
	t.Helper()
	require.Equal(t, want.Index, got.Index)
	require.Equal(t, want.Term, got.Term)
	require.Equal(t, want.Type, got.Type)
	require.True(t, bytes.Equal(want.Data, got.Data), "data %q != %q", want.Data, got.Data)
	require.True(t, bytes.Equal(want.Extensions, got.Extensions), "extensions")
	require.True(t, want.AppendedAt.Equal(got.AppendedAt), "appended at %v != %v", want.AppendedAt, got.AppendedAt)
}

func storeRange(t *testing.T, s *Store, lo, hi uint64) {
	t.Helper()
	var ls []*raft.Log
	for i := lo; i <= hi; i++ {
		ls = append(ls, testLog(i))
	}
	require.NoError(t, s.StoreLogs(ls))
}

func requireIndexes(t *testing.T, s *Store, first, last uint64) {
	t.Helper()
	f, err := s.FirstIndex()
	require.NoError(t, err)
	l, err := s.LastIndex()
	require.NoError(t, err)
	require.Equal(t, [2]uint64{first, last}, [2]uint64{f, l}, "first, last")
}

func TestBoltstoreEmpty(t *testing.T) {
	s := openTemp(t)
	requireIndexes(t, s, 0, 0)
	var l raft.Log
	require.ErrorIs(t, s.GetLog(1, &l), raft.ErrLogNotFound)
	_, err := s.Get([]byte("k"))
	require.ErrorIs(t, err, ErrKeyNotFound)
	_, err = s.GetUint64([]byte("k"))
	require.ErrorIs(t, err, ErrKeyNotFound)
	// hashicorp/raft tells "never written" from failure by this string.
	require.Equal(t, "not found", err.Error())
	require.NoError(t, s.DeleteRange(1, 10), "deleting nothing is fine")
}

func TestBoltstoreStoreAndGetLogs(t *testing.T) {
	s := openTemp(t)
	require.NoError(t, s.StoreLog(testLog(1)))
	storeRange(t, s, 2, 30)
	requireIndexes(t, s, 1, 30)
	for i := uint64(1); i <= 30; i++ {
		var got raft.Log
		require.NoError(t, s.GetLog(i, &got))
		requireSameLog(t, testLog(i), &got)
	}
	var l raft.Log
	require.ErrorIs(t, s.GetLog(31, &l), raft.ErrLogNotFound)
	require.ErrorIs(t, s.GetLog(0, &l), raft.ErrLogNotFound)

	// Keys are big-endian, so order is numeric across byte boundaries.
	storeRange(t, s, 250, 260)
	requireIndexes(t, s, 1, 260)
	require.NoError(t, s.StoreLog(testLog(1<<40)))
	requireIndexes(t, s, 1, 1<<40)

	// Overwriting an index replaces the entry (raft truncates conflicts
	// with DeleteRange first, but a rewrite must not corrupt).
	repl := testLog(5)
	repl.Term, repl.Data = 99, []byte("replaced")
	require.NoError(t, s.StoreLog(repl))
	var got raft.Log
	require.NoError(t, s.GetLog(5, &got))
	requireSameLog(t, repl, &got)
}

func TestBoltstoreGetLogReturnsCopies(t *testing.T) {
	s := openTemp(t)
	storeRange(t, s, 1, 1)
	var got raft.Log
	require.NoError(t, s.GetLog(1, &got))
	require.NoError(t, s.Close())
	// Reading after the mmap is gone would fault if these aliased it.
	require.Equal(t, "data-1", string(got.Data))
	require.Equal(t, []byte{1}, got.Extensions)
}

func TestBoltstoreDeleteRange(t *testing.T) {
	cases := []struct {
		name        string
		min, max    uint64
		first, last uint64
		gone        []uint64
		kept        []uint64
	}{
		{"prefix (compaction)", 1, 50, 51, 300, []uint64{1, 2, 50}, []uint64{51, 300}},
		{"suffix (conflict truncation)", 201, 300, 1, 200, []uint64{201, 300}, []uint64{1, 200}},
		{"middle", 100, 199, 1, 300, []uint64{100, 150, 199}, []uint64{99, 200}},
		{"single", 7, 7, 1, 300, []uint64{7}, []uint64{6, 8}},
		{"everything", 0, 1000, 0, 0, []uint64{1, 300}, nil},
		{"beyond", 400, 500, 1, 300, nil, []uint64{1, 300}},
		{"empty range", 10, 9, 1, 300, nil, []uint64{9, 10}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := openTemp(t)
			// Enough entries to span several bbolt pages, so deletes
			// cross page boundaries.
			storeRange(t, s, 1, 300)
			require.NoError(t, s.DeleteRange(tc.min, tc.max))
			requireIndexes(t, s, tc.first, tc.last)
			var l raft.Log
			for _, i := range tc.gone {
				require.ErrorIs(t, s.GetLog(i, &l), raft.ErrLogNotFound, "index %d", i)
			}
			for _, i := range tc.kept {
				require.NoError(t, s.GetLog(i, &l), "index %d", i)
				requireSameLog(t, testLog(i), &l)
			}
			// Every index of the range is gone, every other stays.
			for i := uint64(1); i <= 300; i++ {
				err := s.GetLog(i, &l)
				if i >= tc.min && i <= tc.max {
					require.ErrorIs(t, err, raft.ErrLogNotFound, "index %d", i)
				} else {
					require.NoError(t, err, "index %d", i)
				}
			}
		})
	}
}

func TestBoltstoreStable(t *testing.T) {
	s := openTemp(t)
	k := []byte("LastVoteCand")
	require.NoError(t, s.Set(k, []byte("node-2")))
	v, err := s.Get(k)
	require.NoError(t, err)
	require.Equal(t, []byte("node-2"), v)
	v[0] = 'X' // the caller owns the copy
	v, err = s.Get(k)
	require.NoError(t, err)
	require.Equal(t, []byte("node-2"), v)

	require.NoError(t, s.Set(k, []byte{}))
	v, err = s.Get(k)
	require.NoError(t, err, "an empty value is not a missing one")
	require.Empty(t, v)

	for _, n := range []uint64{0, 1, 255, 256, 1 << 63, ^uint64(0)} {
		require.NoError(t, s.SetUint64([]byte("CurrentTerm"), n))
		got, err := s.GetUint64([]byte("CurrentTerm"))
		require.NoError(t, err)
		require.Equal(t, n, got)
	}
	// Same layout as raft-boltdb: 8 big-endian bytes.
	v, err = s.Get([]byte("CurrentTerm"))
	require.NoError(t, err)
	require.Equal(t, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, v)

	require.NoError(t, s.Set([]byte("short"), []byte{1, 2}))
	_, err = s.GetUint64([]byte("short"))
	require.ErrorIs(t, err, ErrCorrupt)
}

func TestBoltstoreReopenKeepsEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raft.db")
	s, err := Open(path)
	require.NoError(t, err)
	require.Equal(t, path, s.Path())
	storeRange(t, s, 1, 100)
	require.NoError(t, s.DeleteRange(1, 20))
	require.NoError(t, s.SetUint64([]byte("CurrentTerm"), 7))
	require.NoError(t, s.Set([]byte("LastVoteCand"), []byte("n3")))
	require.NoError(t, s.Close())

	s, err = Open(path)
	require.NoError(t, err)
	defer s.Close()
	requireIndexes(t, s, 21, 100)
	var l raft.Log
	require.ErrorIs(t, s.GetLog(20, &l), raft.ErrLogNotFound)
	for i := uint64(21); i <= 100; i++ {
		require.NoError(t, s.GetLog(i, &l))
		requireSameLog(t, testLog(i), &l)
	}
	term, err := s.GetUint64([]byte("CurrentTerm"))
	require.NoError(t, err)
	require.Equal(t, uint64(7), term)
	v, err := s.Get([]byte("LastVoteCand"))
	require.NoError(t, err)
	require.Equal(t, "n3", string(v))
}

func TestBoltstoreSecondOpenFailsFast(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raft.db")
	s, err := Open(path)
	require.NoError(t, err)
	start := time.Now()
	_, err = Open(path, WithLockTimeout(100*time.Millisecond))
	require.ErrorIs(t, err, ErrLocked)
	require.Less(t, time.Since(start), 5*time.Second, "gave up instead of hanging")
	require.Contains(t, err.Error(), path)
	require.NoError(t, s.Close())

	s, err = Open(path, WithLockTimeout(100*time.Millisecond))
	require.NoError(t, err, "the lock is released on Close")
	require.NoError(t, s.Close())
}

func TestBoltstoreOpenErrors(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "missing-dir", "raft.db"))
	require.Error(t, err)
	require.False(t, errors.Is(err, ErrLocked))
	require.Contains(t, err.Error(), "boltstore: open")
}

func TestBoltstoreUseAfterClose(t *testing.T) {
	s := openTemp(t)
	require.NoError(t, s.Close())
	var l raft.Log
	require.Error(t, s.GetLog(1, &l))
	require.Error(t, s.StoreLog(testLog(1)))
	_, err := s.Get([]byte("k"))
	require.Error(t, err)
	require.False(t, errors.Is(err, ErrKeyNotFound), "a closed store is not an empty one")
}

func TestBoltstoreConcurrent(t *testing.T) {
	s := openTemp(t)
	const writers, per = 4, 25
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				idx := uint64(w*per + i + 1)
				if err := s.StoreLog(testLog(idx)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			var l raft.Log
			for i := 0; i < per; i++ {
				if _, err := s.LastIndex(); err != nil {
					t.Error(err)
					return
				}
				if err := s.GetLog(uint64(i+1), &l); err != nil && !errors.Is(err, raft.ErrLogNotFound) {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	requireIndexes(t, s, 1, writers*per)
}

// TestBoltstoreRaftUsesIt runs one real raft node on the store, restarts it
// on the same file, and checks the term, vote and log survived: the
// contract raft relies on, including ErrKeyNotFound on a fresh file.
func TestBoltstoreRaftUsesIt(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "raft.db")
	run := func(bootstrap bool, cmd string) (term, last uint64) {
		s, err := Open(path)
		require.NoError(t, err)
		defer s.Close()
		has, err := raft.HasExistingState(s, s, raft.NewInmemSnapshotStore())
		require.NoError(t, err)
		require.Equal(t, !bootstrap, has)
		conf := raft.DefaultConfig()
		conf.LocalID = "n1"
		conf.HeartbeatTimeout = 50 * time.Millisecond
		conf.ElectionTimeout = 50 * time.Millisecond
		conf.LeaderLeaseTimeout = 50 * time.Millisecond
		conf.LogLevel = "error"
		addr, trans := raft.NewInmemTransport("")
		if bootstrap {
			require.NoError(t, raft.BootstrapCluster(conf, s, s, raft.NewInmemSnapshotStore(), trans,
				raft.Configuration{Servers: []raft.Server{{ID: conf.LocalID, Address: addr}}}))
		}
		r, err := raft.NewRaft(conf, &countFSM{}, s, s, raft.NewInmemSnapshotStore(), trans)
		require.NoError(t, err)
		defer func() { require.NoError(t, r.Shutdown().Error()) }()
		select {
		case <-r.LeaderCh():
		case <-time.After(10 * time.Second):
			t.Fatal("no leader")
		}
		require.NoError(t, r.Apply([]byte(cmd), 5*time.Second).Error())
		last, err = s.LastIndex()
		require.NoError(t, err)
		term, err = s.GetUint64([]byte("CurrentTerm"))
		require.NoError(t, err)
		return term, last
	}
	term1, last1 := run(true, "one")
	term2, last2 := run(false, "two")
	require.Greater(t, term2, term1, "the restarted node won a later term: its term was read back")
	require.Greater(t, last2, last1, "the log continued from what was on disk")
	s, err := Open(path)
	require.NoError(t, err)
	defer s.Close()
	var l raft.Log
	found := map[string]bool{}
	first, _ := s.FirstIndex()
	for i := first; i <= last2; i++ {
		require.NoError(t, s.GetLog(i, &l))
		if l.Type == raft.LogCommand {
			found[string(l.Data)] = true
		}
	}
	require.Equal(t, map[string]bool{"one": true, "two": true}, found)
}

type countFSM struct {
	mu sync.Mutex
	n  int
}

func (f *countFSM) Apply(*raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	return nil
}
func (f *countFSM) Snapshot() (raft.FSMSnapshot, error) { return nil, errors.New("no snapshots") }
func (f *countFSM) Restore(rc io.ReadCloser) error {
	return rc.Close()
}
