package safety

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	coordkitpy "github.com/coordkit/coordkit/clients/python"
	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/internal/coordapi"
	"github.com/coordkit/coordkit/session"
)

// pyRMW is the Python process client (Config.Python), rmw.py: it takes the
// lock — coordkit's mutex through the coordination API with clients/python's
// coordkit.py, or with redsync as the lock redis-py's Lock — then does what
// `coordctl check rmw` does and prints the RMWResult line. Its one argument
// is a pyArgs as JSON.
//
//go:embed rmw.py
var pyRMW []byte

// pyArgs is what one Python process client does (rmw.py's argument).
type pyArgs struct {
	Lock   string  `json:"lock"`             // "api" or "redis"
	Dir    string  `json:"dir,omitempty"`    // api: the directory of coordkit.py
	Agent  string  `json:"agent,omitempty"`  // api: the agent's URL
	Redis  string  `json:"redis,omitempty"`  // redis: host:port
	Name   string  `json:"name"`             // the lock's name (api) or Redis key (redis)
	Grants string  `json:"grants,omitempty"` // redis: the key whose INCR numbers the grants
	TTL    float64 `json:"ttl,omitempty"`    // redis: the lock's timeout, seconds
	Scope  string  `json:"scope,omitempty"`  // redis: the scope header (the API gives its own)
	Wait   float64 `json:"wait"`             // how long to wait for the lock, seconds (lockTimeout)

	Res     string  `json:"res"` // the resource's URL
	Key     string  `json:"key"` // the counter's key
	ID      string  `json:"id"`  // the write's id, tagged .TOKEN
	Work    float64 `json:"work"`
	Fence   bool    `json:"fence"`
	IfMatch bool    `json:"if_match"`

	SQL *pySQL `json:"sql,omitempty"` // the SQL resource instead of Res
}

// pySQL is the run's SQL resource as a Python client opens it: the driver
// (sqlite: sqlite3, postgres: psycopg2, mysql: PyMySQL), where the database
// is, and the run's tables (prefix: <p>_counter, <p>_seq, <p>_log and, fenced,
// the fence table <p>_fence, which the client's writes check with
// coordkit.fence_sql). Key is the counter's row (Key above).
type pySQL struct {
	Driver string `json:"driver"`
	Path   string `json:"path,omitempty"` // sqlite
	DSN    string `json:"dsn,omitempty"`  // postgres: a libpq URL or key=value DSN
	// mysql: go-sql-driver's DSN, taken apart
	Host     string `json:"host,omitempty"`
	Port     int    `json:"port,omitempty"`
	User     string `json:"user,omitempty"`
	Password string `json:"password,omitempty"`
	DB       string `json:"db,omitempty"`
	Prefix   string `json:"prefix"`
	Fenced   bool   `json:"fenced"`
}

// PythonSQLModule is the module rmw.py imports for the SQL resource of
// driver (sqlite, postgres, mysql) and the Debian package that serves it to
// /usr/bin/python3; "" for a driver it does not know.
func PythonSQLModule(driver string) (module, debianPackage string) {
	switch driver {
	case "sqlite":
		return "sqlite3", "python3"
	case "postgres":
		return "psycopg2", "python3-psycopg2"
	case "mysql":
		return "pymysql", "python3-pymysql"
	}
	return "", ""
}

// pySQLOf is res as rmw.py opens it.
func pySQLOf(res *sqlResource) (*pySQL, error) {
	s := &pySQL{Driver: res.dialect.String(), Prefix: res.prefix, Fenced: res.fence != nil}
	switch res.dialect {
	case sqlfence.SQLite:
		s.Path = res.path
	case sqlfence.Postgres:
		s.DSN = res.dsn
	case sqlfence.MySQL:
		cfg, err := mysql.ParseDSN(res.dsn)
		if err != nil {
			return nil, err
		}
		host, port, err := net.SplitHostPort(cfg.Addr)
		if err != nil {
			return nil, fmt.Errorf("the Python clients reach MySQL over TCP: %q: %w", cfg.Addr, err)
		}
		s.Host, s.User, s.Password, s.DB = host, cfg.User, cfg.Passwd, cfg.DBName
		if s.Port, err = strconv.Atoi(port); err != nil {
			return nil, fmt.Errorf("MySQL port %q: %w", port, err)
		}
	}
	return s, nil
}

// pyClients is what the Python process clients need: the directory of
// rmw.py and, for coordkit's mutex, the coordination API they hold
// through — an agent served in the run's process on loopback, on its own
// client of the cluster (its faults are the agent's too) — beside
// coordkit.py.
type pyClients struct {
	dir string
	cli *clientv3.Client // api only
	srv *coordapi.Server // api only
	sql *pySQL           // the SQL resource, if the run's is one
}

// startPython writes rmw.py and, for coordkit's mutex, coordkit.py, and
// starts the agent.
func (r *run) startPython(ctx context.Context) (*pyClients, error) {
	dir, err := os.MkdirTemp(r.cfg.DataDir, "python-")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "rmw.py"), pyRMW, 0o644); err != nil {
		return nil, err
	}
	if r.redsync != nil {
		return &pyClients{dir: dir}, nil
	}
	if err := coordkitpy.Install(dir); err != nil {
		return nil, err
	}
	var sqlRes *pySQL
	if res, ok := r.res.(*sqlResource); ok {
		if sqlRes, err = pySQLOf(res); err != nil {
			return nil, err
		}
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: r.cluster.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	srv, err := coordapi.Listen(ctx, coordapi.Config{Client: cli, SessionOptions: []session.Option{session.WithTTL(r.cfg.TTL)}}, "127.0.0.1:0")
	if err != nil {
		_ = cli.Close()
		return nil, err
	}
	return &pyClients{dir: dir, cli: cli, srv: srv, sql: sqlRes}, nil
}

// close stops the agent, if any, releasing what it holds.
func (p *pyClients) close() {
	if p.srv != nil {
		_ = p.srv.Close()
		_ = p.cli.Close()
	}
}

// pyExec is the command line of one Python process client.
func (r *run) pyExec(id string) (string, []string) {
	a := pyArgs{Res: strings.TrimSuffix(r.resURL, "/"), Key: counterKey, ID: id, Work: r.rmwWork().Seconds(),
		Wait: lockTimeout.Seconds(), Fence: !r.cfg.NoFenceFirst && !r.tokenless(), IfMatch: r.cfg.IfMatch}
	if r.redsync != nil {
		a.Lock, a.Redis, a.Name, a.Grants, a.TTL, a.Scope = "redis", r.redsync.addr, r.redsync.lockKey(), r.redsync.grantsKey(), r.cfg.TTL.Seconds(), Scope
	} else {
		a.Lock, a.Dir, a.Agent, a.Name, a.SQL = "api", r.py.dir, r.py.srv.URL, Scope, r.py.sql
	}
	b, _ := json.Marshal(a) // strings and numbers: cannot fail
	return r.cfg.Python, []string{filepath.Join(r.py.dir, "rmw.py"), string(b)}
}
