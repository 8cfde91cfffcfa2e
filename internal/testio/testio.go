// Package testio holds what tests use to watch output written by another
// goroutine or process: SyncBuffer.
package testio

import (
	"bytes"
	"sync"
)

// SyncBuffer is a bytes.Buffer safe to read (String) while another
// goroutine writes it: a process's stderr, a logger's handler.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
