package boltstore

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
)

// BenchmarkBoltstoreStoreLogs measures a durable append (one transaction,
// one fsync) of a batch of 128-byte entries.
func BenchmarkBoltstoreStoreLogs(b *testing.B) {
	for _, batch := range []int{1, 16} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			s, err := Open(filepath.Join(b.TempDir(), "raft.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ls := make([]*raft.Log, batch)
			next := uint64(1)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for j := range ls {
					ls[j] = &raft.Log{Index: next, Term: 1, Data: make([]byte, 128)}
					next++
				}
				if err := s.StoreLogs(ls); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkBoltstoreGetLog(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "raft.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var ls []*raft.Log
	for i := uint64(1); i <= 1000; i++ {
		ls = append(ls, &raft.Log{Index: i, Term: 1, Data: make([]byte, 128)})
	}
	if err := s.StoreLogs(ls); err != nil {
		b.Fatal(err)
	}
	var l raft.Log
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.GetLog(uint64(i%1000)+1, &l); err != nil {
			b.Fatal(err)
		}
	}
}
