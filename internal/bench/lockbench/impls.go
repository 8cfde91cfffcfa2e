package lockbench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/internal/pglock"
	"github.com/coordkit/coordkit/internal/redislock"
	"github.com/coordkit/coordkit/lock"
)

// The columns, as the -w json rows name them.
const (
	colCoordkit   = "coordkit"
	colEtcd       = "etcd_concurrency"
	colRedsync    = "redsync"
	colRedsyncMin = "redsync_min_retry"
)

// redsyncVersion is the version go.mod requires, for the table's title.
const redsyncVersion = "v4.18.1"

// impl builds lockers of one implementation on a name.
type impl struct {
	key   string // the column
	label string
	// redis: the lockers poll Redis; a waiter leaves no key in etcd.
	redis bool
	// pg: the lockers are advisory locks; a waiter shows in pg_locks.
	pg bool
	// api: the lockers are Python processes holding through the
	// coordination API; their requests to etcd are the agent's.
	api bool
	// pyWaits: the lockers are Python processes (redis-py) whose waiting
	// shows only in their own "wait" line (pyLocker.waits).
	pyWaits bool
	// new makes a locker; a waiter that must not give up (the handoff
	// test) asks for patient ones.
	new func(ctx context.Context, e *env, name string, patient bool) (bench.Locker, error)
}

// etcdImpls are always measured, in this order.
var etcdImpls = []impl{
	{key: colCoordkit, label: "coordkit", new: func(ctx context.Context, e *env, name string, _ bool) (bench.Locker, error) {
		cli, err := e.client()
		if err != nil {
			return nil, err
		}
		m, err := lock.New(cli, name, lock.WithTTL(10*time.Second))
		if err != nil {
			return nil, err
		}
		// Create the session now, outside the timed part.
		h, err := m.Lock(ctx)
		if err != nil {
			_ = m.Close()
			return nil, err
		}
		if err := h.Unlock(ctx); err != nil {
			_ = m.Close()
			return nil, err
		}
		return &bench.CoordkitMutex{M: m}, nil
	}},
	{key: colEtcd, label: "etcd concurrency", new: func(ctx context.Context, e *env, name string, _ bool) (bench.Locker, error) {
		cli, err := e.client()
		if err != nil {
			return nil, err
		}
		s, err := concurrency.NewSession(cli, concurrency.WithTTL(10), concurrency.WithContext(ctx))
		if err != nil {
			return nil, err
		}
		return &bench.EtcdMutex{S: s, M: concurrency.NewMutex(s, name)}, nil
	}},
}

// redsyncImpls are measured against redsync, after etcdImpls. The second
// sets the retry delay to 0, the least redsync accepts: WithRetryDelay
// takes any duration (no lower bound; a negative one acts as 0), so its
// waiters retry back to back, one SET NX and one release script per try.
var redsyncImpls = []impl{
	{key: colRedsync, label: "redsync (default options)", redis: true, new: newRedsyncLocker()},
	{key: colRedsyncMin, label: "redsync (retry delay 0)", redis: true, new: newRedsyncLocker(redsync.WithRetryDelay(0))},
}

// patientTries are a patient waiter's tries: with the default delay, years.
const patientTries = 1 << 30

// newRedsyncLocker makes redsync lockers with redsync's own default expiry
// (8s) and tries (32) unless patient, and opts.
func newRedsyncLocker(opts ...redsync.Option) func(context.Context, *env, string, bool) (bench.Locker, error) {
	return func(_ context.Context, e *env, name string, patient bool) (bench.Locker, error) {
		c := e.redisClient()
		l := &redsyncLocker{}
		c.AddHook(&l.hook)
		all := opts
		if patient {
			all = append(all[:len(all):len(all)], redsync.WithTries(patientTries))
		}
		rs, err := redislock.NewRedsync(c, e.keyspace.Key(name), 0, all...)
		if err != nil {
			return nil, err
		}
		l.rs = rs
		return l, nil
	}
}

// redsyncLocker is a redsync lock on its own go-redis client, whose hook
// counts the SET NX tries that found the lock taken: the only sign, seen
// from outside, that a redsync waiter waits.
type redsyncLocker struct {
	rs      *redislock.Redsync
	release func(context.Context) error
	hook    failedTries
}

func (l *redsyncLocker) Lock(ctx context.Context) error {
	release, err := l.rs.Acquire(ctx)
	l.release = release
	return err
}

func (l *redsyncLocker) Unlock(ctx context.Context) error { return l.release(ctx) }
func (l *redsyncLocker) Close()                           {} // env closes the client

// gaveUp reports whether err is redsync running out of tries (ErrFailed or
// the last try's "taken"), which a user's code would retry.
func gaveUp(err error) bool { return errors.Is(err, redislock.ErrNotAcquired) }

// failedTries is a go-redis hook counting SET commands answered with
// "not set" (SET NX on a key that exists).
type failedTries struct{ n atomic.Int64 }

func (h *failedTries) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *failedTries) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if b, ok := cmd.(*redis.BoolCmd); ok && cmd.Name() == "set" && cmd.Err() == nil && !b.Val() {
			h.n.Add(1)
		}
		return err
	}
}

func (h *failedTries) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// env is one run's servers and the clients made on them.
type env struct {
	endpoints []string // the embedded etcd
	mu        sync.Mutex
	clients   []*clientv3.Client
	names     atomic.Int64

	redisAddr    string
	redis        *redis.Client // for cleanup
	keyspace     redislock.Keyspace
	redisClients []*redis.Client

	// count, while set, counts the requests of the clients made
	// (client): the uncontended step sets one per implementation.
	count *rpcCounter

	apiSrv *apiServer // the coordination API, against api

	pgDSN   string
	pgWhere string    // host:port/database, for the title (no password)
	pgAdmin *pgx.Conn // pg_locks, for the handoff's "the other waits"
	pgMu    sync.Mutex
	pgNS    pglock.Namespace
	watcher *clientv3.Client // the crash handoff's view of etcd
}

// dialRedis checks that addr answers and sets up the run's keyspace.
func (e *env) dialRedis(ctx context.Context, addr string, ks redislock.Keyspace) error {
	c, err := redislock.Dial(ctx, addr, redislock.DefaultDialTimeout)
	if err != nil {
		return err
	}
	if ks.Prefix() == "" {
		if ks, err = redislock.NewKeyspace("bench-lock"); err != nil {
			_ = c.Close()
			return err
		}
	}
	e.redisAddr, e.redis, e.keyspace = addr, c, ks
	return nil
}

func (e *env) client() (*clientv3.Client, error) {
	cfg := clientv3.Config{Endpoints: e.endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()}
	if e.count != nil {
		cfg.DialOptions = []grpc.DialOption{grpc.WithChainUnaryInterceptor(e.count.unary), grpc.WithChainStreamInterceptor(e.count.stream)}
	}
	c, err := clientv3.New(cfg)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.clients = append(e.clients, c)
	e.mu.Unlock()
	return c, nil
}

// redisClient is a client with its own connection pool, as each etcd
// locker has its own connection.
func (e *env) redisClient() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: e.redisAddr, DialTimeout: redislock.DefaultDialTimeout})
	e.mu.Lock()
	e.redisClients = append(e.redisClients, c)
	e.mu.Unlock()
	return c
}

func (e *env) close() {
	for _, c := range e.clients {
		_ = c.Close()
	}
	for _, c := range e.redisClients {
		_ = c.Close()
	}
	if e.redis != nil {
		_ = e.redis.Close()
	}
	if e.pgAdmin != nil {
		_ = e.pgAdmin.Close(context.Background())
	}
	if e.apiSrv != nil {
		e.apiSrv.close() // before the clients: the agent's is among them
	}
}

// name returns a fresh lock name, so runs do not see each other's keys.
func (e *env) name(what string) string {
	return fmt.Sprintf("bench/%s-%d", what, e.names.Add(1))
}

// lockers makes n lockers of im on one name.
func (e *env) lockers(ctx context.Context, im impl, name string, n int, patient bool) ([]bench.Locker, error) {
	out := make([]bench.Locker, 0, n)
	for range n {
		l, err := im.new(ctx, e, name, patient)
		if err != nil {
			return out, err
		}
		out = append(out, l)
	}
	return out, nil
}

func closeAll(ls []bench.Locker) {
	for _, l := range ls {
		l.Close()
	}
}
