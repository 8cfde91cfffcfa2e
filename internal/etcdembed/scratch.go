package etcdembed

import "context"

// Scratch starts a single member named "scenario" in dir with fsync off,
// for a run that tests ordering and leases, not durability (coordctl's
// scenarios, the demo's tour, a sweep's scenario trials), and returns its
// client endpoints and a function that stops it. Its signature is
// scenarios.EtcdStarter's.
func Scratch(ctx context.Context, dir string) ([]string, func(), error) {
	srv, err := Start(ctx, Config{Name: "scenario", DataDir: dir, UnsafeNoFsync: true})
	if err != nil {
		return nil, nil, err
	}
	return srv.Endpoints(), srv.Close, nil
}
