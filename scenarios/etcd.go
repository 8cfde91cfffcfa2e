package scenarios

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// EtcdStarter starts an etcd for one scenario run, keeping its data in dir
// (a fresh directory under Env.TempDir), and returns its client endpoints
// and a function that stops it. The scenarios test ordering and leases, not
// durability, so a starter may turn fsync off. coordctl fills it from
// internal/etcdembed and the tests from internal/etcdembed/etcdtest; this
// package does not link an etcd server itself.
type EtcdStarter func(ctx context.Context, dir string) (endpoints []string, stop func(), err error)

// etcdConn is an etcd for one scenario: the caller's (Env.EtcdEndpoints) or
// one started by Env.StartEtcd in Env.TempDir.
type etcdConn struct {
	Endpoints []string
	// Prefix namespaces the keys of this run, so runs against a shared etcd
	// do not meet.
	Prefix   string
	Embedded bool
	stop     func()
	clients  []*clientv3.Client
}

// startEtcd connects to env's etcd or starts one with env.StartEtcd. It
// returns ErrNoEtcd when env has neither.
func startEtcd(ctx context.Context, env Env, scenario string) (*etcdConn, error) {
	c := &etcdConn{Prefix: fmt.Sprintf("coordkit-scenarios/%s/%d-%d", scenario, env.Seed, time.Now().UnixNano())}
	if len(env.EtcdEndpoints) > 0 {
		c.Endpoints = env.EtcdEndpoints
		env.Progressf("using etcd at %v", c.Endpoints)
		return c, nil
	}
	if env.StartEtcd == nil {
		return nil, fmt.Errorf("%w: %s needs Env.EtcdEndpoints or Env.StartEtcd", ErrNoEtcd, scenario)
	}
	env.Progressf("starting an embedded etcd")
	dir, err := env.freshDir(scenario + "-etcd")
	if err != nil {
		return nil, err
	}
	endpoints, stop, err := env.StartEtcd(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("start etcd: %w", err)
	}
	if len(endpoints) == 0 {
		if stop != nil {
			stop()
		}
		return nil, fmt.Errorf("%w: Env.StartEtcd returned no endpoints", ErrNoEtcd)
	}
	c.stop, c.Endpoints, c.Embedded = stop, endpoints, true
	return c, nil
}

// Client returns a new client; Close closes it.
func (c *etcdConn) Client(ctx context.Context) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   c.Endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
		Context:     ctx,
	})
	if err != nil {
		return nil, fmt.Errorf("connect to etcd at %v: %w", c.Endpoints, err)
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := cli.Status(sctx, c.Endpoints[0]); err != nil {
		_ = cli.Close()
		return nil, fmt.Errorf("etcd at %v does not answer: %w", c.Endpoints, err)
	}
	c.clients = append(c.clients, cli)
	return cli, nil
}

// Close closes every client and stops the etcd it started.
func (c *etcdConn) Close() {
	for _, cli := range c.clients {
		_ = cli.Close()
	}
	if c.stop != nil {
		c.stop()
	}
}
