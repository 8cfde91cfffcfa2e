package etcdembed

import (
	"context"
	"fmt"
)

// Wait returns when ctx ends or the member stops: nil for ctx and for a
// member that stopped cleanly, the member's error (wrapped as "etcd
// failed: …") otherwise. The caller still calls Close.
func (s *Server) Wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case err, ok := <-s.Err():
		if !ok || err == nil {
			return nil
		}
		return fmt.Errorf("etcd failed: %w", err)
	}
}
