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

// LostCommit is a TCP proxy in front of a database server that, once
// armed, loses the server's answer to a COMMIT: on a connection whose
// client sends a statement with the word COMMIT in it (any case), every
// byte the server sends from then on is dropped, while the client's bytes
// still go through, so the server commits and the client never hears of
// it. Other connections, and connections opened later, go through until
// they send a COMMIT themselves. It stops when the test ends.
type LostCommit struct {
	// DSN opens the proxied database (for a command under test: --dsn).
	DSN    string
	armed  atomic.Bool
	ln     net.Listener
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
	closed bool
}

// LoseCommitAnswers puts a LostCommit in front of db's server (PostgreSQL
// or MySQL; SQLite has no wire to cut).
func LoseCommitAnswers(t testing.TB, db *DB) *LostCommit {
	t.Helper()
	var target string
	var rewrite func(addr string) string
	switch db.Dialect {
	case sqlfence.Postgres:
		u, err := url.Parse(db.DSN)
		if err != nil || u.Host == "" {
			t.Skipf("sqltest: LoseCommitAnswers needs a postgres:// URL in %s", PostgresEnv)
		}
		target = u.Host
		rewrite = func(addr string) string { v := *u; v.Host = addr; return v.String() }
	case sqlfence.MySQL:
		cfg, err := mysql.ParseDSN(db.DSN)
		if err != nil || cfg.Net != "tcp" {
			t.Skipf("sqltest: LoseCommitAnswers needs a tcp address in %s", MySQLEnv)
		}
		target = cfg.Addr
		rewrite = func(addr string) string { c := cfg.Clone(); c.Addr = addr; return c.FormatDSN() }
	default:
		t.Fatalf("sqltest: LoseCommitAnswers: no server for %v", db.Dialect)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &LostCommit{ln: ln, DSN: rewrite(ln.Addr().String())}
	p.wg.Add(1)
	go p.accept(target)
	t.Cleanup(p.close)
	return p
}

// Arm starts losing COMMIT answers.
func (p *LostCommit) Arm() { p.armed.Store(true) }

func (p *LostCommit) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.conns = append(p.conns, c)
	return true
}

func (p *LostCommit) accept(target string) {
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
		p.wg.Add(2)
		go func() { // client → server, watching for COMMIT
			defer p.wg.Done()
			defer s.Close()
			buf := make([]byte, 32<<10)
			var tail []byte
			for {
				n, err := c.Read(buf)
				if n > 0 {
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

func (p *LostCommit) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
