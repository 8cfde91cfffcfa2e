// Package sqltest gives tests a fresh database on each engine sqlfence
// supports: SQLite always (a file in t.TempDir()), PostgreSQL and
// MySQL/MariaDB when COORDKIT_TEST_POSTGRES_DSN and COORDKIT_TEST_MYSQL_DSN
// name a server. Each call creates a database with a random name
// (coordkit_test_<hex>) on that server and drops it when the test ends,
// because the servers are shared by every test run on the machine.
//
// A variable that is unset skips the test, naming the variable. A variable
// that is set whose server does not answer fails the test under CI=true
// and skips it otherwise.
//
// It imports the three drivers (pgx "pgx", go-sql-driver "mysql", modernc
// "sqlite"); package sqlfence itself imports none.
package sqltest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"
	_ "modernc.org/sqlite"             // driver "sqlite"

	"github.com/coordkit/coordkit/fencing/sqlfence"
)

// The environment variables naming the shared servers, e.g.
// postgres://root@127.0.0.1:5432/test?sslmode=disable (pgx: URL or
// key=value form) and root@tcp(127.0.0.1:3306)/test (go-sql-driver/mysql).
const (
	PostgresEnv = "COORDKIT_TEST_POSTGRES_DSN"
	MySQLEnv    = "COORDKIT_TEST_MYSQL_DSN"
)

// connectWait bounds how long a server may take to answer before it counts
// as not answering. It is not a test assertion.
const connectWait = 15 * time.Second

// DB is a fresh, empty database of one engine.
type DB struct {
	*sql.DB
	Dialect sqlfence.Dialect
	// Driver is the database/sql driver name and DSN opens this database
	// (for a command under test: --driver and --dsn).
	Driver string
	DSN    string
	// Name is the database's name (the file name for SQLite).
	Name string
}

// Rebind rewrites ? placeholders to the dialect's ($1, $2, … for PostgreSQL).
func (d *DB) Rebind(query string) string {
	if d.Dialect != sqlfence.Postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Dialects lists every dialect, SQLite first.
var Dialects = []sqlfence.Dialect{sqlfence.SQLite, sqlfence.Postgres, sqlfence.MySQL}

// Each runs fn as a subtest per engine ("sqlite", "postgres", "mysql"),
// each with its own fresh database; the server engines skip or fail as
// the package doc says.
func Each(t *testing.T, fn func(t *testing.T, db *DB)) {
	t.Helper()
	for _, d := range Dialects {
		t.Run(d.String(), func(t *testing.T) { fn(t, Open(t, d)) })
	}
}

// Open returns a fresh database of dialect d, closed and dropped when the
// test ends.
func Open(t testing.TB, d sqlfence.Dialect) *DB {
	t.Helper()
	switch d {
	case sqlfence.SQLite:
		path := filepath.Join(t.TempDir(), "test.db")
		return open(t, &DB{Dialect: d, Driver: "sqlite", DSN: sqlfence.SQLiteDSN(path), Name: path})
	case sqlfence.Postgres, sqlfence.MySQL:
		return openServer(t, d)
	}
	t.Fatalf("sqltest: unknown dialect %v", d)
	return nil
}

func open(t testing.TB, db *DB) *DB {
	t.Helper()
	sdb, err := sql.Open(db.Driver, db.DSN)
	if err != nil {
		t.Fatalf("sqltest: open %s: %v", db.Dialect, err)
	}
	t.Cleanup(func() { _ = sdb.Close() })
	db.DB = sdb
	return db
}

func envFor(d sqlfence.Dialect) string {
	if d == sqlfence.Postgres {
		return PostgresEnv
	}
	return MySQLEnv
}

func openServer(t testing.TB, d sqlfence.Dialect) *DB {
	t.Helper()
	env := envFor(d)
	base := os.Getenv(env)
	if base == "" {
		t.Skipf("%s is not set: no %s server to test against", env, d)
	}
	admin, err := sql.Open(d.DriverName(), base)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), connectWait)
		err = admin.PingContext(ctx)
		cancel()
		if err != nil {
			_ = admin.Close()
		}
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is set but its server does not answer: %v", env, err)
		}
		t.Skipf("%s is set but its server does not answer (a failure under CI=true): %v", env, err)
	}
	name := randomName(t)
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		_ = admin.Close()
		t.Fatalf("sqltest: create database %s on %s: %v", name, env, err)
	}
	db := &DB{Dialect: d, Driver: d.DriverName(), Name: name}
	// Registered before open's Close, so it runs after it: the database
	// is dropped once this test's connections are closed.
	t.Cleanup(func() {
		defer admin.Close()
		drop := "DROP DATABASE IF EXISTS " + name
		if d == sqlfence.Postgres {
			drop += " WITH (FORCE)" // connections a failed test left open
		}
		if _, err := admin.Exec(drop); err != nil {
			t.Errorf("sqltest: drop database %s: %v", name, err)
		}
	})
	db.DSN, err = withDatabase(d, base, name)
	if err != nil {
		t.Fatalf("sqltest: %s: %v", env, err)
	}
	return open(t, db)
}

func randomName(t testing.TB) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "coordkit_test_" + hex.EncodeToString(b)
}

// withDatabase returns base with its database replaced by name.
func withDatabase(d sqlfence.Dialect, base, name string) (string, error) {
	if d == sqlfence.MySQL {
		cfg, err := mysql.ParseDSN(base)
		if err != nil {
			return "", err
		}
		cfg.DBName = name
		return cfg.FormatDSN(), nil
	}
	if strings.HasPrefix(base, "postgres://") || strings.HasPrefix(base, "postgresql://") {
		u, err := url.Parse(base)
		if err != nil {
			return "", err
		}
		u.Path = "/" + name
		u.RawPath = ""
		return u.String(), nil
	}
	return base + " dbname=" + name, nil // key=value form: the last one wins
}
