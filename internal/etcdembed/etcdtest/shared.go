package etcdtest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/namespace"
	"go.uber.org/goleak"

	"github.com/coordkit/coordkit/internal/etcdembed"
)

// Shared is one etcd member that a package's tests share instead of
// starting one each: the first test that asks for it starts it, and Main
// closes it after the last. Each Start is a key space of its own (a prefix,
// through etcd's namespace package), so tests can run in parallel, and
// again with -count, and use the same names. Revisions are the member's, shared by
// all: a test may compare revisions, not expect particular ones. A test
// that stops its server or needs a fresh one calls Start instead.
//
// The zero value is ready to use; declare one per package:
//
//	var etcd etcdtest.Shared
//
//	func TestMain(m *testing.M) { os.Exit(etcdtest.Main(m, &etcd)) }
type Shared struct {
	mu     sync.Mutex
	srv    *etcdembed.Server
	dir    string
	err    error
	starts int // Start calls so far: each gets a key space of its own
}

// NS is one test's view of a Shared member: the clients it returns keep
// their keys, watches and lease lookups under the test's prefix.
type NS struct {
	srv    *etcdembed.Server
	prefix string
}

func (s *Shared) server() (*etcdembed.Server, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil || s.err != nil {
		return s.srv, s.err
	}
	s.dir, s.err = os.MkdirTemp("", "etcdtest-shared-")
	if s.err != nil {
		return nil, s.err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s.srv, s.err = etcdembed.Start(ctx, etcdembed.Config{DataDir: s.dir, UnsafeNoFsync: true})
	if s.err != nil {
		_ = os.RemoveAll(s.dir)
	}
	return s.srv, s.err
}

// Start returns a key space of its own on the shared member, as if t had
// started a server of its own, starting the member if no test has yet.
// Subtests that call Client on their parent's NS share the parent's keys.
func (s *Shared) Start(t testing.TB) *NS {
	t.Helper()
	srv, err := s.server()
	if err != nil {
		t.Fatalf("start shared embedded etcd: %v", err)
	}
	s.mu.Lock()
	s.starts++
	n := s.starts
	s.mu.Unlock()
	return &NS{srv: srv, prefix: fmt.Sprintf("test/%s/%d/", t.Name(), n)}
}

// StartWithClient is Start followed by NS.Client.
func (s *Shared) StartWithClient(t testing.TB) (*NS, *clientv3.Client) {
	t.Helper()
	ns := s.Start(t)
	return ns, ns.Client(t)
}

// Endpoints starts the member if need be and returns its client URLs, for
// Examples (which get no t): their keys are not namespaced, so each
// Example uses names of its own. It panics if etcd does not start.
func (s *Shared) Endpoints() []string {
	srv, err := s.server()
	if err != nil {
		panic(fmt.Sprintf("start shared embedded etcd: %v", err))
	}
	return srv.Endpoints()
}

// ExampleClient is a client of the member, for Examples (see Endpoints);
// a program makes its own with clientv3.New.
func (s *Shared) ExampleClient() (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: s.Endpoints()})
}

// Close stops the member, if it was started, and removes its data.
func (s *Shared) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		s.srv.Close()
		s.srv = nil
	}
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
		s.dir = ""
	}
}

// Client returns a new client whose keys live under the test's prefix,
// closed by t.Cleanup.
func (n *NS) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	cli := Client(t, n.srv)
	cli.KV = namespace.NewKV(cli.KV, n.prefix)
	cli.Watcher = &closeGuard{Watcher: namespace.NewWatcher(cli.Watcher, n.prefix)}
	cli.Lease = namespace.NewLease(cli.Lease, n.prefix)
	return cli
}

// Prefix is the key space's prefix ("test/TestName/N/"): what a process that
// reaches the member through Endpoints must put in front of its names to
// stay out of other tests' way.
func (n *NS) Prefix() string { return n.prefix }

// Endpoints are the member's client URLs. A client made from them sees
// every test's keys: use Prefix in the names it touches.
func (n *NS) Endpoints() []string { return n.srv.Endpoints() }

// Main runs the tests of m, closes shared (which may be nil) and, if they
// passed, fails the run on goroutines left running (etcd's own background
// loops ignored, and opts). It returns the exit code for os.Exit.
func Main(m *testing.M, shared *Shared, opts ...goleak.Option) int {
	code := m.Run()
	if shared != nil {
		shared.Close()
	}
	if code != 0 {
		return code
	}
	// A holder whose key went may still be revoking its lease when its
	// test ends (session.Close waits up to 3s for the revoke): wait for
	// that rather than call it a leak.
	opts = append(IgnoreEtcdGoroutines(), opts...)
	deadline := time.Now().Add(10 * time.Second)
	err := goleak.Find(opts...)
	for err != nil && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		err = goleak.Find(opts...)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "goleak:", err)
		return 1
	}
	return 0
}

// closeGuard keeps Watch and Close of etcd's namespace watcher apart: that
// watcher counts its watches in a WaitGroup that Close waits on, so a Watch
// racing with the client's Close (a holder's loss watcher rewatching as
// its test ends) is a data race there. After Close, Watch returns a closed
// channel, as a closed client's watcher does.
type closeGuard struct {
	clientv3.Watcher
	mu     sync.Mutex
	closed bool
}

func (g *closeGuard) Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		ch := make(chan clientv3.WatchResponse)
		close(ch)
		return ch
	}
	return g.Watcher.Watch(ctx, key, opts...)
}

func (g *closeGuard) Close() error {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	return g.Watcher.Close()
}
