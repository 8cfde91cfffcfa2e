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

// Run starts a member (Start), calls ready with its client endpoints once
// it serves, and runs until ctx ends or the member stops (Wait). It returns
// nil when ctx ended, also during the start; ready's error when ready
// fails; Start's or Wait's error otherwise. The member is closed when Run
// returns.
func Run(ctx context.Context, cfg Config, ready func(endpoints []string) error) error {
	srv, err := Start(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer srv.Close()
	if err := ready(srv.Endpoints()); err != nil {
		return err
	}
	err = srv.Wait(ctx)
	if ctx.Err() != nil {
		return nil
	}
	return err
}
