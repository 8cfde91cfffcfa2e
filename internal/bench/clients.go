package bench

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Clients hands out the etcd clients of one benchmark run, each with its
// own connection (as separate processes would have), and closes them all
// at the end. Set Endpoints; the zero value is otherwise ready.
type Clients struct {
	Endpoints []string

	mu      sync.Mutex
	clients []*clientv3.Client
	names   atomic.Int64
}

// Client dials a new client of the run.
func (c *Clients) Client() (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.clients = append(c.clients, cli)
	c.mu.Unlock()
	return cli, nil
}

// CloseAll closes every client Client handed out.
func (c *Clients) CloseAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cli := range c.clients {
		_ = cli.Close()
	}
	c.clients = nil
}

// Name returns a fresh lock name, "bench/WHAT-N", so that the steps of a
// run do not see each other's keys.
func (c *Clients) Name(what string) string {
	return fmt.Sprintf("bench/%s-%d", what, c.names.Add(1))
}
