package sqltest

import (
	"bytes"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/coordkit/coordkit/fencing/sqlfence"
)

// Proxy is a TCP proxy in front of a database server, for tests of what
// goes over the wire. It counts round trips: a run of bytes from the
// client after the server last spoke on that connection is one (messages
// a driver pipelines count once). Once told to (LoseCommitAnswers), it
// loses the server's answers to COMMIT. It stops when the test ends.
type Proxy struct {
	// DSN opens the proxied database (for a command under test: --dsn).
	DSN    string
	armed  atomic.Bool
	trips  atomic.Int64
	ln     net.Listener
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
	closed bool
}

// NewProxy puts a Proxy in front of db's server (PostgreSQL or MySQL;
// SQLite has no wire).
func NewProxy(t testing.TB, db *DB) *Proxy {
	t.Helper()
	var target string
	var rewrite func(addr string) string
	switch db.Dialect {
	case sqlfence.Postgres:
		u, err := url.Parse(db.DSN)
		if err != nil || u.Host == "" {
			t.Skipf("sqltest: NewProxy needs a postgres:// URL in %s", PostgresEnv)
		}
		target = u.Host
		rewrite = func(addr string) string { v := *u; v.Host = addr; return v.String() }
	case sqlfence.MySQL:
		cfg, err := mysql.ParseDSN(db.DSN)
		if err != nil || cfg.Net != "tcp" {
			t.Skipf("sqltest: NewProxy needs a tcp address in %s", MySQLEnv)
		}
		target = cfg.Addr
		rewrite = func(addr string) string { c := cfg.Clone(); c.Addr = addr; return c.FormatDSN() }
	default:
		t.Fatalf("sqltest: NewProxy: no server for %v", db.Dialect)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, DSN: rewrite(ln.Addr().String())}
	p.wg.Add(1)
	go p.accept(target)
	t.Cleanup(p.close)
	return p
}

// LoseCommitAnswers makes the proxy lose the server's answer to COMMIT
// from now on: on a connection whose client sends a statement with the
// word COMMIT in it (any case), every byte the server sends after that is
// dropped while the client's bytes still go through, so the server
// commits and the client never hears of it. Other connections go through
// until they send a COMMIT themselves.
func (p *Proxy) LoseCommitAnswers() { p.armed.Store(true) }

// RoundTrips returns the round trips counted so far, on all connections.
func (p *Proxy) RoundTrips() int64 { return p.trips.Load() }

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.conns = append(p.conns, c)
	return true
}

func (p *Proxy) accept(target string) {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			return
		}
		s, err := net.Dial("tcp", target)
		if err != nil {
			_ = c.Close()
			continue
		}
		if !p.track(s) {
			_ = c.Close()
			return
		}
		var lost atomic.Bool
		var serverSpoke atomic.Bool // since the client last sent
		serverSpoke.Store(true)
		p.wg.Add(2)
		go func() { // client → server, watching for COMMIT
			defer p.wg.Done()
			defer s.Close()
			buf := make([]byte, 32<<10)
			var tail []byte
			for {
				n, err := c.Read(buf)
				if n > 0 {
					if serverSpoke.Swap(false) {
						p.trips.Add(1)
					}
					seen := append(tail, bytes.ToLower(buf[:n])...)
					if p.armed.Load() && bytes.Contains(seen, []byte("commit")) {
						lost.Store(true)
					}
					tail = append([]byte(nil), seen[max(0, len(seen)-5):]...)
					if _, werr := s.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
		go func() { // server → client, dropped once COMMIT went by
			defer p.wg.Done()
			defer c.Close()
			buf := make([]byte, 32<<10)
			for {
				n, err := s.Read(buf)
				if n > 0 {
					serverSpoke.Store(true)
				}
				if n > 0 && !lost.Load() {
					if _, werr := c.Write(buf[:n]); werr != nil {
						_, _ = io.Copy(io.Discard, s)
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

func (p *Proxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
