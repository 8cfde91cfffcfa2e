package scenarios

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/coordkit/coordkit/internal/etcdembed"
)

// etcdConn is an etcd for one scenario: the caller's (Env.EtcdEndpoints) or
// an embedded single member started in Env.TempDir.
type etcdConn struct {
	Endpoints []string
	// Prefix namespaces the keys of this run, so runs against a shared etcd
	// do not meet.
	Prefix   string
	Embedded bool
	srv      *etcdembed.Server
	clients  []*clientv3.Client
}

// startEtcd connects to env's etcd or starts an embedded member (fsync off:
// the scenarios test ordering and leases, not durability).
func startEtcd(ctx context.Context, env Env, scenario string) (*etcdConn, error) {
	c := &etcdConn{Prefix: fmt.Sprintf("coordkit-scenarios/%s/%d-%d", scenario, env.Seed, time.Now().UnixNano())}
	if len(env.EtcdEndpoints) > 0 {
		c.Endpoints = env.EtcdEndpoints
		env.Progressf("using etcd at %v", c.Endpoints)
		return c, nil
	}
	env.Progressf("starting an embedded etcd")
	srv, err := etcdembed.Start(ctx, etcdembed.Config{
		Name:          "scenario",
		DataDir:       filepath.Join(env.TempDir, scenario+"-etcd"),
		UnsafeNoFsync: true,
	})
	if err != nil {
		return nil, err
	}
	c.srv, c.Endpoints, c.Embedded = srv, srv.Endpoints(), true
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

// Close closes every client and stops the embedded member.
func (c *etcdConn) Close() {
	for _, cli := range c.clients {
		_ = cli.Close()
	}
	if c.srv != nil {
		c.srv.Close()
	}
}
