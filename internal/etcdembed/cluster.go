package etcdembed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coordkit/coordkit/internal/faultproxy"
	"go.etcd.io/etcd/client/pkg/v3/types"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/membership"
	"go.uber.org/zap"
)

// Errors of the cluster's fault operations.
var (
	// ErrNoMember is returned for a member index outside 1..Size.
	ErrNoMember = errors.New("etcdembed: no such member")
	// ErrMemberRunning is returned by StartMember for a member that runs.
	ErrMemberRunning = errors.New("etcdembed: member is running")
	// ErrMemberStopped is returned by StopMember for a member that is stopped.
	ErrMemberStopped = errors.New("etcdembed: member is stopped")
	// ErrClusterClosed is returned after Close.
	ErrClusterClosed = errors.New("etcdembed: cluster closed")
	// ErrBadInitialCluster is returned by StartFreshMember for an initial
	// cluster that does not name the member at its peer URL.
	ErrBadInitialCluster = errors.New("etcdembed: initial cluster does not name the member")
)

// ClusterConfig describes a cluster of embedded members in one process.
type ClusterConfig struct {
	// Size is the number of members; 3 when zero. At most 7.
	Size int
	// DataDir holds one directory per member (member-1, member-2, ...); required.
	DataDir string
	// ClientURLs are the URLs clients connect to (the client proxies), one
	// per member; free loopback ports when empty. A single URL is expanded to
	// consecutive ports: http://127.0.0.1:2379 gives 2379, 2380, 2381.
	ClientURLs []string
	// LogLevel is etcd's zap log level; "error" when empty.
	LogLevel string
	// UnsafeNoFsync disables fsync in etcd. A stopped member's process
	// state is gone but its writes are in the OS page cache, so its data
	// survives a stop either way; only a machine crash would tell the
	// difference, and none is simulated.
	UnsafeNoFsync bool
	// ReadyTimeout bounds how long StartCluster waits for quorum; 60s when zero.
	ReadyTimeout time.Duration
	// TickMs and ElectionMs are etcd's heartbeat interval and election
	// timeout; etcd's defaults (100, 1000) when zero.
	TickMs, ElectionMs uint
}

// Cluster is a running multi-member etcd cluster in this process. Every peer
// listener and every client listener sits behind a fault-injecting TCP proxy
// (internal/faultproxy), and each member advertises its proxies' URLs, so all
// traffic between members and from clients passes through them.
//
// Peer faults are per directed link. Every sender reaches member j at the
// same advertised URL, so a plain TCP proxy cannot tell who dialed it; the
// peer proxies read the X-Server-From header that etcd's peers send with
// their stream and pipeline requests, and apply the faults of the link
// from the dialer to j to the request bytes and of j to the dialer to the
// response bytes (a stream response carries j's messages). Client links
// are per member. A cut holds traffic rather than dropping it, as TCP does
// through a partition. (go.etcd.io/etcd/pkg/v3/proxy could do neither: its
// blackhole drops bytes out of the middle of etcd's stateful streams, and
// one proxy per member cannot cut the links a member dialed; see
// docs/safety.md.)
type Cluster struct {
	cfg    ClusterConfig
	token  string
	faults *faultproxy.Faults
	ids    *memberIDs // member ID as X-Server-From spells it → index

	lock *dirLock // on cfg.DataDir, released by Close

	mu      sync.Mutex
	members []*member
	closed  bool
}

type member struct {
	index      int
	name       string
	dir        string
	listenPeer *url.URL // the member's own listeners
	listenCli  *url.URL
	peerURL    *url.URL // the proxies in front of them, which it advertises
	clientURL  *url.URL
	peerProxy  *faultproxy.Proxy
	cliProxy   *faultproxy.Proxy

	etcd *embed.Etcd // nil while stopped
	// stopping is closed when a StopMember has finished closing the member.
	stopping chan struct{}
	id       uint64 // etcd's member ID, once started
	level    zap.AtomicLevel
	// initialCluster, when set, makes the next start join a running
	// cluster (--initial-cluster-state=existing) as these members
	// (StartFreshMember) instead of forming a new one.
	initialCluster string
}

// memberIDs names the member that dialed a peer proxy (faultproxy.Senders).
// A replaced member gets a new ID (MemberAdd's) while the proxies run.
type memberIDs struct {
	mu sync.RWMutex
	m  map[string]int
}

func (ids *memberIDs) Sender(id string) int {
	ids.mu.RLock()
	defer ids.mu.RUnlock()
	return ids.m[id]
}

func (ids *memberIDs) set(id string, index int) {
	ids.mu.Lock()
	ids.m[id] = index
	ids.mu.Unlock()
}

// MemberStatus describes one member for Status.
type MemberStatus struct {
	Index     int    `json:"index"`
	Name      string `json:"name"`
	ID        string `json:"id,omitempty"`
	Running   bool   `json:"running"`
	Ready     bool   `json:"ready"`
	ClientURL string `json:"client_url"`
	PeerURL   string `json:"peer_url"`
	// Leader is the index of the member this member believes leads (0: none).
	Leader int `json:"leader"`
}

// LinkFault is one active fault.
type LinkFault = faultproxy.Fault

// ClusterStatus is a snapshot of the cluster.
type ClusterStatus struct {
	Members []MemberStatus `json:"members"`
	// Leader is the index of the leader most reachable members agree on; 0 when none.
	Leader int         `json:"leader"`
	Faults []LinkFault `json:"faults"`
}

// StartCluster starts the members concurrently (each waits for a quorum of
// the others) and returns once all of them serve clients, or an error after
// cfg.ReadyTimeout or when ctx is done.
//
// The whole data directory is locked for the cluster's life (as Start locks
// a single member's): a second cluster on it fails at once with a
// *DataDirInUseError instead of waiting for ever on bbolt's file lock.
func StartCluster(ctx context.Context, cfg ClusterConfig) (*Cluster, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("etcdembed: DataDir is required")
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("etcdembed: %w", err)
	}
	lock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		fresh := !fileExists(filepath.Join(cfg.DataDir, "cluster.json"))
		c, err := startCluster(ctx, cfg)
		// Free ports are found by listening and closing, so another process
		// can take one before the cluster binds it. When the ports were ours
		// to choose, choose again; a restart must keep its ports.
		if err == nil || attempt == maxPortAttempts || !fresh || len(cfg.ClientURLs) > 0 || !addrInUse(err) {
			if err != nil {
				lock.release()
				return nil, err
			}
			c.lock = lock
			return c, nil
		}
		if cfg.DataDir != "" {
			if rmErr := removeFreshCluster(cfg.DataDir); rmErr != nil {
				return nil, errors.Join(err, rmErr)
			}
		}
	}
}

// maxPortAttempts bounds the retries of a start whose free port was taken.
const maxPortAttempts = 4

// addrInUse reports whether err is a listener finding its port taken.
func addrInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// removeFreshCluster removes what a failed first start of a cluster wrote in
// dataDir (its port choices and empty member directories), nothing else.
func removeFreshCluster(dataDir string) error {
	entries, err := os.ReadDir(dataDir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() == "cluster.json" || strings.HasPrefix(e.Name(), "member-") {
			if err := os.RemoveAll(filepath.Join(dataDir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

func startCluster(ctx context.Context, cfg ClusterConfig) (*Cluster, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("etcdembed: DataDir is required")
	}
	if cfg.Size == 0 {
		cfg.Size = 3
	}
	if cfg.Size < 1 || cfg.Size > 7 {
		return nil, fmt.Errorf("etcdembed: cluster size %d: want 1..7", cfg.Size)
	}
	if cfg.LogLevel == "" {
		cfg.LogLevel = "error"
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = 60 * time.Second
	}
	clientURLs, err := expandClientURLs(cfg.ClientURLs, cfg.Size)
	if err != nil {
		return nil, err
	}
	peerURLs, err := peerURLsOf(cfg.DataDir, cfg.Size)
	if err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg, token: "coordkit-cluster", faults: faultproxy.NewFaults(cfg.Size), ids: &memberIDs{m: map[string]int{}}}
	for i := 1; i <= cfg.Size; i++ {
		m, err := newMember(i, cfg.DataDir, clientURLs[i-1], peerURLs[i-1])
		if err != nil {
			return nil, err
		}
		c.members = append(c.members, m)
		// The ID etcd derives for a member of a new cluster, known before
		// it starts, so a proxy can name a dialer from its first request.
		id := membership.NewMember(m.name, types.URLs{*m.peerURL}, c.token, nil).ID
		c.ids.set(id.String(), i)
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.ReadyTimeout)
	defer cancel()
	errs := make(chan error, len(c.members))
	for _, m := range c.members {
		go func() { errs <- c.startMember(ctx, m) }()
	}
	var first error
	for range c.members {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		c.Close()
		if errors.Is(first, context.DeadlineExceeded) {
			return nil, fmt.Errorf("%w after %s: %v", ErrNotReady, cfg.ReadyTimeout, first)
		}
		return nil, first
	}
	return c, nil
}

func expandClientURLs(urls []string, n int) ([]*url.URL, error) {
	var out []*url.URL
	switch len(urls) {
	case 0:
		for range n {
			u, err := stableURL()
			if err != nil {
				return nil, err
			}
			out = append(out, u)
		}
	case 1:
		u, err := parseURL("client", urls[0])
		if err != nil {
			return nil, err
		}
		host, port, err := net.SplitHostPort(u.Host)
		if err != nil {
			return nil, fmt.Errorf("etcdembed: bad client URL %q: %w", urls[0], err)
		}
		p, err := strconv.Atoi(port)
		if err != nil || p <= 0 || p+n-1 > 65535 {
			return nil, fmt.Errorf("etcdembed: bad client URL %q: want an explicit port", urls[0])
		}
		for i := range n {
			v := *u
			v.Host = net.JoinHostPort(host, strconv.Itoa(p+i))
			out = append(out, &v)
		}
	default:
		if len(urls) != n {
			return nil, fmt.Errorf("etcdembed: %d client URLs for %d members", len(urls), n)
		}
		for _, raw := range urls {
			u, err := parseURL("client", raw)
			if err != nil {
				return nil, err
			}
			out = append(out, u)
		}
	}
	return out, nil
}

// Stable ports are drawn from [stablePortMin, stablePortMax): below the
// kernel's ephemeral range (Linux: 32768-60999), where a listen or dial on
// port 0 never lands.
const stablePortMin, stablePortMax = 20000, 32000

// StableURL returns a free loopback URL for a listener that a stopped
// member gives up and its restart binds again (its peer and client ports
// and their proxies', and the client URLs a caller picks for a cluster it
// will stop members of). A port from the ephemeral range could be taken
// meanwhile by anyone's port-0 listener or outgoing connection (seen in
// full test runs: "bind: address already in use" on restart); one from
// below it only by another stable pick. Picks of this process never repeat
// a port, and each pick is claimed for the life of the process with a lock
// on a file named for the port in the system's temporary directory
// (coordkit-stable-ports/), which picks of other processes respect: a
// stopped member's port is free on the machine but not free to them
// (seen in full test runs, where several packages' clusters run at once).
// Where the lock cannot be taken or made, the probe alone decides.
func StableURL() (string, error) {
	for range 200 {
		port := stablePortMin + rand.IntN(stablePortMax-stablePortMin)
		if !claimStablePort(port) {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		_ = l.Close()
		return "http://" + l.Addr().String(), nil
	}
	return FreeURL()
}

// stablePorts are the ports this process has claimed (claimStablePort),
// with the open files whose locks claim them: kept open until the process
// exits, which releases the locks.
var stablePorts = struct {
	sync.Mutex
	claimed map[int]*os.File
}{claimed: map[int]*os.File{}}

// claimStablePort claims port for this process: false if this process or
// another one (a lock on its file, tryLock) has it. If the lock cannot be
// taken for another reason (the file cannot be made, no flock), the port
// counts as claimed by this process alone.
func claimStablePort(port int) bool {
	stablePorts.Lock()
	defer stablePorts.Unlock()
	if _, ok := stablePorts.claimed[port]; ok {
		return false
	}
	dir := filepath.Join(os.TempDir(), "coordkit-stable-ports")
	_ = os.MkdirAll(dir, 0o777)
	f, err := tryLock(filepath.Join(dir, strconv.Itoa(port)), 0o666)
	if errors.Is(err, errLocked) {
		return false
	}
	stablePorts.claimed[port] = f // nil when err: this process's alone
	return true
}

func stableURL() (*url.URL, error) {
	raw, err := StableURL()
	if err != nil {
		return nil, err
	}
	return url.Parse(raw)
}

// peerURLsOf returns the advertised peer URLs (the peer proxies) of the
// cluster in dataDir. They are part of the membership etcd persists, so a
// restart on the same directory must advertise the same ones: they are
// chosen once and kept in dataDir/cluster.json.
func peerURLsOf(dataDir string, n int) ([]*url.URL, error) {
	path := filepath.Join(dataDir, "cluster.json")
	var saved struct {
		PeerURLs []string `json:"peer_urls"`
	}
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &saved); err != nil {
			return nil, fmt.Errorf("etcdembed: %s: %w", path, err)
		}
		if len(saved.PeerURLs) != n {
			return nil, fmt.Errorf("etcdembed: %s is a cluster of %d members, not %d", dataDir, len(saved.PeerURLs), n)
		}
		var out []*url.URL
		for _, raw := range saved.PeerURLs {
			u, err := parseURL("peer", raw)
			if err != nil {
				return nil, err
			}
			out = append(out, u)
		}
		return out, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("etcdembed: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("etcdembed: %w", err)
	}
	var out []*url.URL
	for len(out) < n {
		u, err := stableURL()
		if err != nil {
			return nil, err
		}
		// A port is free once its probe listener closes, so the kernel can
		// hand the same one out twice in a row; etcd refuses an initial
		// cluster with a duplicate URL (seen in a full test run).
		if slices.Contains(saved.PeerURLs, u.String()) {
			continue
		}
		out = append(out, u)
		saved.PeerURLs = append(saved.PeerURLs, u.String())
	}
	b, _ := json.Marshal(saved)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return nil, fmt.Errorf("etcdembed: %w", err)
	}
	return out, nil
}

func newMember(i int, dataDir string, clientURL, peerURL *url.URL) (*member, error) {
	m := &member{index: i, name: fmt.Sprintf("member-%d", i), clientURL: clientURL, peerURL: peerURL}
	m.dir = filepath.Join(dataDir, m.name)
	if err := os.MkdirAll(m.dir, 0o700); err != nil {
		return nil, fmt.Errorf("etcdembed: %w", err)
	}
	var err error
	if m.listenPeer, err = stableURL(); err != nil {
		return nil, err
	}
	if m.listenCli, err = stableURL(); err != nil {
		return nil, err
	}
	return m, nil
}

// openProxies starts m's peer and client proxies. A stopped member has
// none, so connecting to it is refused, as for a stopped process.
func (c *Cluster) openProxies(m *member) error {
	var err error
	if m.peerProxy, err = faultproxy.Start(m.peerURL.Host, m.listenPeer.Host, m.index, c.ids, c.faults); err != nil {
		return fmt.Errorf("etcdembed: peer proxy on %s: %w", m.peerURL.Host, err)
	}
	if m.cliProxy, err = faultproxy.Start(m.clientURL.Host, m.listenCli.Host, m.index, nil, c.faults); err != nil {
		m.closeProxies()
		return fmt.Errorf("etcdembed: client proxy on %s: %w", m.clientURL.Host, err)
	}
	return nil
}

// closeProxies closes m's proxies and resets their connections, as the
// kernel resets the sockets of a process that died.
func (m *member) closeProxies() {
	if m.peerProxy != nil {
		m.peerProxy.Close()
	}
	if m.cliProxy != nil {
		m.cliProxy.Close()
	}
	m.peerProxy, m.cliProxy = nil, nil
}

func (c *Cluster) closeProxies() {
	for _, m := range c.members {
		m.closeProxies()
	}
}

func (c *Cluster) embedConfig(m *member) (*embed.Config, zap.AtomicLevel, error) {
	ec := embed.NewConfig()
	ec.Name = m.name
	ec.Dir = m.dir
	ec.ListenClientUrls = []url.URL{*m.listenCli}
	ec.AdvertiseClientUrls = []url.URL{*m.clientURL}
	ec.ListenPeerUrls = []url.URL{*m.listenPeer}
	ec.AdvertisePeerUrls = []url.URL{*m.peerURL}
	initial := ""
	for _, o := range c.members {
		if initial != "" {
			initial += ","
		}
		initial += o.name + "=" + o.peerURL.String()
	}
	ec.InitialCluster = initial
	ec.InitialClusterToken = c.token
	ec.ClusterState = embed.ClusterStateFlagNew
	if m.initialCluster != "" {
		ec.InitialCluster = m.initialCluster
		ec.ClusterState = embed.ClusterStateFlagExisting
	}
	if c.cfg.TickMs > 0 {
		ec.TickMs = c.cfg.TickMs
	}
	if c.cfg.ElectionMs > 0 {
		ec.ElectionMs = c.cfg.ElectionMs
	}
	level, err := zap.ParseAtomicLevel(c.cfg.LogLevel)
	if err != nil {
		return nil, level, fmt.Errorf("etcdembed: bad log level %q: %w", c.cfg.LogLevel, err)
	}
	zc := zap.NewProductionConfig()
	zc.Level = level
	zc.OutputPaths = []string{"stderr"}
	zc.ErrorOutputPaths = []string{"stderr"}
	logger, err := zc.Build(zap.Fields(zap.String("member", m.name)))
	if err != nil {
		return nil, level, fmt.Errorf("etcdembed: logger: %w", err)
	}
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(logger)
	ec.LogLevel = c.cfg.LogLevel
	ec.UnsafeNoFsync = c.cfg.UnsafeNoFsync
	ec.ListenMetricsUrls = nil
	return ec, level, nil
}

// startMember starts m (fresh or from its data) and waits until it serves
// clients or ctx is done. On ctx expiry the member keeps running: it may
// still join once a quorum is back.
func (c *Cluster) startMember(ctx context.Context, m *member) error {
	ec, level, err := c.embedConfig(m)
	if err != nil {
		return err
	}
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return fmt.Errorf("etcdembed: start %s: %w", m.name, err)
	}
	// The proxies open only now that the member listens: a proxy that
	// accepts a connection it cannot forward leaves it open and unserved,
	// and the peer or client on the other end hangs until its own timeout.
	c.ids.set(e.Server.MemberID().String(), m.index)
	c.mu.Lock()
	m.etcd, m.level, m.id = e, level, uint64(e.Server.MemberID())
	if m.peerProxy == nil {
		err = c.openProxies(m)
	}
	c.mu.Unlock()
	if err != nil {
		level.SetLevel(zap.FatalLevel)
		e.Close()
		c.mu.Lock()
		m.etcd = nil
		c.mu.Unlock()
		return err
	}
	select {
	case <-e.Server.ReadyNotify():
		return nil
	case err := <-e.Err():
		c.mu.Lock()
		if m.etcd == e {
			m.etcd = nil
			m.closeProxies()
		}
		c.mu.Unlock()
		level.SetLevel(zap.FatalLevel)
		e.Close()
		return fmt.Errorf("etcdembed: %s failed: %w", m.name, err)
	case <-ctx.Done():
		return fmt.Errorf("etcdembed: %s not ready: %w", m.name, ctx.Err())
	}
}

// Size returns the number of members.
func (c *Cluster) Size() int { return len(c.members) }

// Endpoints returns the client URLs of all members (their client proxies).
func (c *Cluster) Endpoints() []string {
	out := make([]string, len(c.members))
	for i, m := range c.members {
		out[i] = m.clientURL.String()
	}
	return out
}

// DirectEndpoint returns the client URL of member n that bypasses its client
// proxy (for tools that must reach it whatever the faults); "" if n is bad.
func (c *Cluster) DirectEndpoint(n int) string {
	if n < 1 || n > len(c.members) {
		return ""
	}
	return c.members[n-1].listenCli.String()
}

func (c *Cluster) member(n int) (*member, error) {
	if c.closed {
		return nil, ErrClusterClosed
	}
	if n < 1 || n > len(c.members) {
		return nil, fmt.Errorf("%w: %d (want 1..%d)", ErrNoMember, n, len(c.members))
	}
	return c.members[n-1], nil
}

// StopMember stops member n like a crash: its proxies drop all traffic at
// once, and it is stopped without handing over leadership (HardStop) and
// closed in the background. Its data stays for StartMember. ErrMemberStopped
// if it is not running.
func (c *Cluster) StopMember(n int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, err := c.member(n)
	if err != nil {
		return err
	}
	e, level := m.etcd, m.level
	if e == nil {
		return fmt.Errorf("%w: %d", ErrMemberStopped, n)
	}
	m.etcd = nil
	// Cut the member off at once, like a crash. Closing an embedded member
	// takes seconds (gRPC waits for client streams, up to etcd's request
	// timeout), so it goes on in the background; StartMember and Close
	// wait for it. Its links count as cut meanwhile, so nothing it still
	// sends on connections it dialed reaches a peer.
	c.faults.SetDown(n, true)
	m.closeProxies()
	done := make(chan struct{})
	m.stopping = done
	go func() {
		defer close(done)
		level.SetLevel(zap.FatalLevel)
		// No leadership transfer: a crashed leader does not hand over.
		e.Server.HardStop()
		e.Close()
		<-e.Server.StopNotify()
	}()
	return nil
}

// waitStopped waits until a StopMember of m has finished closing it.
func (c *Cluster) waitStopped(ctx context.Context, m *member) error {
	c.mu.Lock()
	ch := m.stopping
	c.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("etcdembed: %s still stopping: %w", m.name, ctx.Err())
	}
}

// StartMember restarts member n from its data and waits until it serves
// clients (which needs a quorum) or ctx is done; in the latter case it keeps
// running and joins when it can. ErrMemberRunning if it runs.
func (c *Cluster) StartMember(ctx context.Context, n int) error {
	return c.restart(ctx, n, nil)
}

// restart starts stopped member n once a StopMember of it has finished
// closing it, after prepare (if any) has readied its data.
func (c *Cluster) restart(ctx context.Context, n int, prepare func(m *member) error) error {
	c.mu.Lock()
	m, err := c.member(n)
	if err == nil && m.etcd != nil {
		err = fmt.Errorf("%w: %d", ErrMemberRunning, n)
	}
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if err := c.waitStopped(ctx, m); err != nil {
		return err
	}
	c.mu.Lock()
	if m.etcd != nil {
		err = fmt.Errorf("%w: %d", ErrMemberRunning, n)
	}
	m.stopping = nil
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if prepare != nil {
		if err := prepare(m); err != nil {
			return err
		}
	}
	c.faults.SetDown(n, false)
	return c.startMember(ctx, m)
}

// Name returns member n's etcd name (member-N); "" if n is bad.
func (c *Cluster) Name(n int) string {
	if n < 1 || n > len(c.members) {
		return ""
	}
	return c.members[n-1].name
}

// PeerURL returns the peer URL member n advertises (its peer proxy's),
// the URL to give MemberAdd for a member that replaces it; "" if n is bad.
func (c *Cluster) PeerURL(n int) string {
	if n < 1 || n > len(c.members) {
		return ""
	}
	return c.members[n-1].peerURL.String()
}

// StartFreshMember starts member n, which must be stopped, as a new
// member that joins the running cluster, the way an operator replaces a
// lost machine (docs/operations.md): its data directory is emptied, and
// it starts with --initial-cluster-state=existing and initialCluster
// (NAME=PEER_URL,..., every member MemberAdd returned, this one under
// Name(n) at PeerURL(n)). The caller removes the old member
// (MemberRemove) and adds the new one (MemberAdd with PeerURL(n)) first,
// as etcdctl would. It keeps its name, peer and client URLs, as a
// StatefulSet's pod keeps its DNS name with a new volume. It waits until
// the member serves clients, as StartMember does. ErrMemberRunning if it
// runs; ErrBadInitialCluster if initialCluster does not name it.
func (c *Cluster) StartFreshMember(ctx context.Context, n int, initialCluster string) error {
	if self := c.Name(n) + "=" + c.PeerURL(n); c.Name(n) != "" && !slices.Contains(strings.Split(initialCluster, ","), self) {
		return fmt.Errorf("%w: %q has no %s", ErrBadInitialCluster, initialCluster, self)
	}
	return c.restart(ctx, n, func(m *member) error {
		if err := os.RemoveAll(m.dir); err != nil {
			return fmt.Errorf("etcdembed: %w", err)
		}
		if err := os.MkdirAll(m.dir, 0o700); err != nil {
			return fmt.Errorf("etcdembed: %w", err)
		}
		c.mu.Lock()
		m.initialCluster = initialCluster
		c.mu.Unlock()
		return nil
	})
}

// Isolate cuts every peer link from and to member n: it neither hears nor
// is heard. Its clients keep their link to it (see BlackholeClient). Bytes
// are held, connections stay up, as TCP behaves in a network partition;
// what was held is delivered after Heal unless a side gave up on the
// connection meanwhile (etcd's peers time out reads after 5s).
func (c *Cluster) Isolate(n int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.member(n); err != nil {
		return err
	}
	c.faults.SetIsolated(n)
	return nil
}

// CutLink drops everything member from sends to member to; the other
// direction is untouched (an asymmetric partition).
func (c *Cluster) CutLink(from, to int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.checkLink(from, to); err != nil {
		return err
	}
	c.faults.SetCut(from, to)
	return nil
}

func (c *Cluster) checkLink(from, to int) error {
	if _, err := c.member(from); err != nil {
		return err
	}
	if _, err := c.member(to); err != nil {
		return err
	}
	if from == to {
		return fmt.Errorf("%w: from and to are both %d", ErrNoMember, from)
	}
	return nil
}

// BlackholeClient cuts the link between member n and its clients in both
// directions. Traffic is held, not dropped: a TCP stream cannot lose bytes
// in its middle, and gRPC's HTTP/2 framing and header compression would be
// corrupted by a gap. Connections stay open, so clients notice through
// their own timeouts and keepalives; what they sent is delivered on Heal
// if they have not closed the connection by then.
func (c *Cluster) BlackholeClient(n int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.member(n); err != nil {
		return err
	}
	c.faults.SetClientCut(n)
	return nil
}

// DelayLink delays everything member from sends to member to by d (0
// removes the delay). The delay applies to each write the proxy forwards,
// so it also slows the link's throughput.
func (c *Cluster) DelayLink(from, to int, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.checkLink(from, to); err != nil {
		return err
	}
	if d < 0 {
		return fmt.Errorf("etcdembed: negative delay %s", d)
	}
	c.faults.SetDelay(from, to, d)
	return nil
}

// Heal removes every link fault: isolation, cut links, delays and client
// blackholes. Stopped members stay stopped and cut off until StartMember.
func (c *Cluster) Heal() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.faults.Heal()
}

// Leader returns the index of the leader the reachable members agree on, or
// 0 when there is none (election in progress, no quorum).
func (c *Cluster) Leader() int { return c.Status().Leader }

// Status reports the members, the leader and the active faults.
func (c *Cluster) Status() ClusterStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	byID := map[uint64]int{}
	for _, m := range c.members {
		if m.id != 0 {
			byID[m.id] = m.index
		}
	}
	st := ClusterStatus{Faults: []LinkFault{}}
	isolated := c.faults.Isolated()
	clientCut := c.faults.ClientCuts()
	votes := map[int]int{}
	for _, m := range c.members {
		ms := MemberStatus{Index: m.index, Name: m.name, ClientURL: m.clientURL.String(), PeerURL: m.peerURL.String()}
		if m.etcd != nil {
			ms.Running = true
			ms.ID = m.etcd.Server.MemberID().String()
			select {
			case <-m.etcd.Server.ReadyNotify():
				ms.Ready = true
			default:
			}
			if lead := m.etcd.Server.Lead(); lead != 0 {
				ms.Leader = byID[lead]
			}
			if !isolated[m.index] && ms.Leader != 0 {
				votes[ms.Leader]++
			}
		}
		st.Members = append(st.Members, ms)
		if isolated[m.index] {
			st.Faults = append(st.Faults, LinkFault{Kind: "isolated", Member: m.index})
		}
		if clientCut[m.index] {
			st.Faults = append(st.Faults, LinkFault{Kind: "client-blackholed", Member: m.index})
		}
	}
	st.Faults = append(st.Faults, c.faults.Links()...)
	best := 0
	for idx, v := range votes {
		if v > votes[best] || (v == votes[best] && idx < best) {
			best = idx
		}
	}
	// A leader only counts if a majority of the cluster follows it.
	if votes[best]*2 > len(c.members) {
		st.Leader = best
	}
	return st
}

// Running returns the indexes of the running members.
func (c *Cluster) Running() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int
	for _, m := range c.members {
		if m.etcd != nil {
			out = append(out, m.index)
		}
	}
	return out
}

// Close stops every member and proxy. The proxies close first, resetting
// every connection, so that the members' graceful shutdown does not wait
// for client streams. It is safe to call twice.
func (c *Cluster) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.closeProxies()
	var stopping []chan struct{}
	var running []*embed.Etcd
	for _, m := range c.members {
		if m.stopping != nil {
			stopping = append(stopping, m.stopping)
		}
		if m.etcd != nil {
			m.level.SetLevel(zap.FatalLevel)
			running = append(running, m.etcd)
			m.etcd = nil
		}
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, e := range running {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.Server.HardStop() // the peers are gone: no leadership transfer
			e.Close()
			<-e.Server.StopNotify()
		}()
	}
	wg.Wait()
	for _, ch := range stopping {
		<-ch
	}
	c.lock.release()
}
