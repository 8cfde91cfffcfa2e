package etcdembed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Errors of the etcdembed package. Match them with errors.Is.
var (
	// ErrNotReady is returned by Start when the member did not become ready in time.
	ErrNotReady = errors.New("etcdembed: member not ready")
	// ErrDataDirInUse is matched by every *DataDirInUseError.
	ErrDataDirInUse = errors.New("etcdembed: data dir in use by another process")
)

// DataDirInUseError is returned by Start when another member — in another
// process or in this one — runs on the data directory. It matches
// ErrDataDirInUse with errors.Is.
type DataDirInUseError struct{ Dir string }

func (e *DataDirInUseError) Error() string {
	return fmt.Sprintf("etcdembed: data dir %s is in use by another process", e.Dir)
}

// Is makes errors.Is(err, ErrDataDirInUse) true for every *DataDirInUseError.
func (e *DataDirInUseError) Is(target error) bool { return target == ErrDataDirInUse }

// dataDirLockName is the file in a data directory whose flock a running
// member holds.
const dataDirLockName = "coordkit.lock"

// errLocked: tryLock found the file locked by another holder.
var errLocked = errors.New("locked by another holder")

// Config describes one embedded member. The zero value is usable except for
// DataDir: empty URLs are replaced by free ports on 127.0.0.1.
type Config struct {
	// Name is the member name; "default" when empty.
	Name string
	// DataDir holds the member's WAL and snapshot; required.
	DataDir string
	// ClientURL is the URL clients connect to, e.g. http://127.0.0.1:2379.
	ClientURL string
	// PeerURL is the URL peers connect to, e.g. http://127.0.0.1:2380.
	PeerURL string
	// LogLevel is etcd's zap log level; "error" when empty.
	LogLevel string
	// UnsafeNoFsync disables fsync in etcd; for tests that do not test durability.
	UnsafeNoFsync bool
	// ReadyTimeout bounds how long Start waits for the member; 30s when zero.
	ReadyTimeout time.Duration
	// ClientTLS, when set, serves clients over TLS only; ClientURL must then
	// be https:// (a free port gets https:// when ClientURL is empty).
	ClientTLS *ClientTLS
}

// ClientTLS is the TLS configuration of the client listener, in PEM files.
type ClientTLS struct {
	CertFile, KeyFile string
	// TrustedCAFile verifies client certificates.
	TrustedCAFile string
	// ClientCertAuth requires a client certificate signed by TrustedCAFile;
	// with etcd's auth enabled its common name is then the user.
	ClientCertAuth bool
}

// Server is a running embedded etcd member.
type Server struct {
	etcd      *embed.Etcd
	lock      *dirLock
	clientURL string
	level     zap.AtomicLevel
	closeOnce sync.Once
}

// Start starts the member and waits until it serves clients, ctx is done, or
// cfg.ReadyTimeout passes (ErrNotReady). It first locks the data directory
// (flock on DataDir/coordkit.lock, held until Close) and fails at once with a
// *DataDirInUseError if another member has it, where etcd itself would wait
// for ever on its database's lock.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	for attempt := 1; ; attempt++ {
		srv, err := start(ctx, cfg)
		// A free port is found by listening and closing, so another process
		// can take it before etcd binds it: when the ports were ours to
		// choose, choose again. etcd fails on listening before it writes
		// to the data directory.
		if err == nil || attempt == maxPortAttempts || cfg.ClientURL != "" || cfg.PeerURL != "" || !addrInUse(err) {
			return srv, err
		}
	}
}

func start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("etcdembed: DataDir is required")
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("etcdembed: %w", err)
	}
	var err error
	if cfg.ClientURL == "" {
		if cfg.ClientURL, err = FreeURL(); err != nil {
			return nil, err
		}
		if cfg.ClientTLS != nil {
			cfg.ClientURL = strings.Replace(cfg.ClientURL, "http://", "https://", 1)
		}
	}
	if cfg.PeerURL == "" {
		if cfg.PeerURL, err = FreeURL(); err != nil {
			return nil, err
		}
	}
	if cfg.Name == "" {
		cfg.Name = "default"
	}
	if cfg.LogLevel == "" {
		cfg.LogLevel = "error"
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = 30 * time.Second
	}
	clientURL, err := parseURL("client", cfg.ClientURL)
	if err != nil {
		return nil, err
	}
	peerURL, err := parseURL("peer", cfg.PeerURL)
	if err != nil {
		return nil, err
	}
	if (cfg.ClientTLS != nil) != (clientURL.Scheme == "https") {
		return nil, fmt.Errorf("etcdembed: client URL %q: https:// goes with ClientTLS, http:// without", cfg.ClientURL)
	}
	// etcd reports a busy port with a JSON log line and a stack trace:
	// find out first, in one line.
	for _, u := range []struct {
		kind string
		url  *url.URL
	}{{"client", clientURL}, {"peer", peerURL}} {
		if err := checkPortFree(u.url.Host); err != nil {
			return nil, fmt.Errorf("etcdembed: %s URL %s: %w", u.kind, u.url, err)
		}
	}

	ec := embed.NewConfig()
	ec.Name = cfg.Name
	ec.Dir = cfg.DataDir
	ec.ListenClientUrls = []url.URL{*clientURL}
	ec.AdvertiseClientUrls = []url.URL{*clientURL}
	ec.ListenPeerUrls = []url.URL{*peerURL}
	ec.AdvertisePeerUrls = []url.URL{*peerURL}
	ec.InitialCluster = fmt.Sprintf("%s=%s", cfg.Name, peerURL.String())
	ec.InitialClusterToken = "coordkit-" + cfg.Name
	if t := cfg.ClientTLS; t != nil {
		ec.ClientTLSInfo = transport.TLSInfo{CertFile: t.CertFile, KeyFile: t.KeyFile,
			TrustedCAFile: t.TrustedCAFile, ClientCertAuth: t.ClientCertAuth}
	}
	// An atomic level lets Close silence the errors etcd logs about its own
	// listeners closing, which are not failures.
	level, err := zap.ParseAtomicLevel(cfg.LogLevel)
	if err != nil {
		return nil, fmt.Errorf("etcdembed: bad log level %q: %w", cfg.LogLevel, err)
	}
	zc := zap.NewProductionConfig()
	zc.Level = level
	zc.DisableStacktrace = true // a command-line tool's user needs the message, not etcd's stack
	zc.OutputPaths = []string{"stderr"}
	zc.ErrorOutputPaths = []string{"stderr"}
	logger, err := zc.Build()
	if err != nil {
		return nil, fmt.Errorf("etcdembed: logger: %w", err)
	}
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(logger)
	ec.LogLevel = cfg.LogLevel
	ec.UnsafeNoFsync = cfg.UnsafeNoFsync
	// Keep the metrics listener off: it would need a port of its own.
	ec.ListenMetricsUrls = nil

	lock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	started := false
	defer func() {
		if !started {
			lock.release()
		}
	}()
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("etcdembed: start member %q: %w", cfg.Name, err)
	}
	timer := time.NewTimer(cfg.ReadyTimeout)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		level.SetLevel(zap.FatalLevel)
		e.Close()
		return nil, fmt.Errorf("etcdembed: member %q failed: %w", cfg.Name, err)
	case <-timer.C:
		level.SetLevel(zap.FatalLevel)
		e.Close()
		return nil, fmt.Errorf("%w after %s", ErrNotReady, cfg.ReadyTimeout)
	case <-ctx.Done():
		level.SetLevel(zap.FatalLevel)
		e.Close()
		return nil, ctx.Err()
	}
	started = true
	return &Server{etcd: e, lock: lock, clientURL: clientURL.String(), level: level}, nil
}

// Endpoints returns the client URLs of the member.
func (s *Server) Endpoints() []string { return []string{s.clientURL} }

// Err reports a fatal server error after start; it is closed when the server stops.
func (s *Server) Err() <-chan error { return s.etcd.Err() }

// Close stops the member and waits for it to shut down. It is safe to call twice.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.level.SetLevel(zap.FatalLevel)
		s.etcd.Close()
		<-s.etcd.Server.StopNotify()
		s.lock.release()
	})
}

// FreeURL returns http://127.0.0.1:PORT for a port that was free a moment ago.
func FreeURL() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("etcdembed: find a free port: %w", err)
	}
	defer l.Close()
	return "http://" + l.Addr().String(), nil
}

// checkPortFree binds hostport and lets it go, so that a busy port is told
// in one line before etcd tries it.
func checkPortFree(hostport string) error {
	l, err := net.Listen("tcp", hostport)
	if err != nil {
		return err
	}
	return l.Close()
}

func parseURL(kind, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("etcdembed: bad %s URL %q: want http://host:port", kind, raw)
	}
	return u, nil
}
