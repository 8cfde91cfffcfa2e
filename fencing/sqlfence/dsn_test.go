package sqlfence_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing/sqlfence"
)

func TestRedactDSNAndScrub(t *testing.T) {
	for _, tc := range []struct {
		name, in, want, secret string
	}{
		{"url", "postgres://root:s3cret@db:5432/app?sslmode=disable", "postgres://root:xxxxx@db:5432/app?sslmode=disable", "s3cret"},
		{"url escaped", "postgresql://u:p%40ss@h/x", "postgresql://u:xxxxx@h/x", "p@ss"},
		{"url query", "postgres://u@h/x?password=s3cret&sslmode=disable", "postgres://u@h/x?password=xxxxx&sslmode=disable", "s3cret"},
		{"url no password", "postgres://root@h/x", "postgres://root@h/x", ""},
		{"key=value", "host=db user=u password=s3cret dbname=app", "host=db user=u password=xxxxx dbname=app", "s3cret"},
		{"key=value quoted", "host=db password='se cret' user=u", "host=db password=xxxxx user=u", "se cret"},
		{"mysql", "root:s3cret@tcp(127.0.0.1:3306)/test", "root:xxxxx@tcp(127.0.0.1:3306)/test", "s3cret"},
		{"mysql @ and : in password", "app:p@ss:w@tcp(db:3306)/app?parseTime=true", "app:xxxxx@tcp(db:3306)/app?parseTime=true", "p@ss:w"},
		{"mysql unix socket", "app:s3cret@unix(/run/mysqld/mysqld.sock)/app", "app:xxxxx@unix(/run/mysqld/mysqld.sock)/app", "s3cret"},
		{"mysql no network", "app:s3cret@/app", "app:xxxxx@/app", "s3cret"},
		// The driver refuses the parameter; the password is hidden all the same.
		{"mysql bad parameter", "root:s3cret@tcp(127.0.0.1:1)/test?parseTime=maybe", "root:xxxxx@tcp(127.0.0.1:1)/test?parseTime=maybe", "s3cret"},
		{"mysql no password", "root@tcp(127.0.0.1:3306)/test", "root@tcp(127.0.0.1:3306)/test", ""},
		{"sqlite path", "/var/lib/app.db", "/var/lib/app.db", ""},
		{"sqlite uri", "file:/var/lib/app.db?_txlock=immediate", "file:/var/lib/app.db?_txlock=immediate", ""},
		{"sqlite path with @", "/var/lib/a@b.db", "/var/lib/a@b.db", ""},
		// Issue 25: what cannot be parsed is not shown at all.
		{"url unterminated bracket", "postgres://nobody:TOPSECRET11@[::1", unparsable, "TOPSECRET11"},
		{"url after junk", "%%%postgres://nobody:TOPSECRET9@x", unparsable, "TOPSECRET9"},
		{"mysql unterminated address", "nobody:MYSECRET2@tcp(127.0.0.1:3306/test", unparsable, "MYSECRET2"},
		{"password as dsn", "TOP@SECRET5", unparsable, "SECRET5"},
		{"kv unterminated quote", "host=db password='se cret", unparsable, "se cret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := sqlfence.RedactDSN(tc.in)
			assert.Equal(t, tc.want, got)
			driverErr := fmt.Errorf("dial %s: refused", tc.in)
			scrubbed := sqlfence.Scrub(driverErr, tc.in)
			require.ErrorIs(t, scrubbed, driverErr, "scrubbing keeps the error's identity")
			if tc.secret == "" {
				assert.Same(t, driverErr, scrubbed, "nothing to scrub")
				return
			}
			assert.NotContains(t, got, tc.secret)
			assert.NotContains(t, scrubbed.Error(), tc.secret)
			assert.Contains(t, scrubbed.Error(), "xxxxx")
		})
	}
}

// unparsable is RedactDSN's text for a DSN it cannot parse.
var unparsable = sqlfence.RedactDSN("not@a dsn")

// Issue 25: PostgreSQL and MySQL DSNs that their drivers cannot parse are
// refused before any driver sees them, and the error never shows them.
func TestNormalizeDSNRefusesUnparsable(t *testing.T) {
	require.Contains(t, unparsable, "not shown")
	for _, tc := range []struct {
		name   string
		d      sqlfence.Dialect
		in     string
		secret string
	}{
		{"url unterminated bracket", sqlfence.Postgres, "postgres://nobody:TOPSECRET11@[::1", "TOPSECRET11"},
		{"url after junk", sqlfence.Postgres, "%%%postgres://nobody:TOPSECRET9@x", "TOPSECRET9"},
		{"password as dsn", sqlfence.Postgres, "TOP@SECRET5", "SECRET5"},
		{"kv unterminated quote", sqlfence.Postgres, "host=db password='se cret", "se cret"},
		{"kv broken url with query", sqlfence.Postgres, "postgres://u:PW1@[::1/db?sslmode=disable", "PW1"},
		{"mysql unterminated address", sqlfence.MySQL, "nobody:MYSECRET2@tcp(127.0.0.1:3306/test", "MYSECRET2"},
		{"mysql no slash", sqlfence.MySQL, "nobody:MYSECRET3@tcp(127.0.0.1:3306)", "MYSECRET3"},
		{"mysql url", sqlfence.MySQL, "mysql://nobody:MYSECRET4@h/db", "MYSECRET4"},
		{"mysql bad dbname escape", sqlfence.MySQL, "u:MYSECRET6@tcp(h)/d%zz", "MYSECRET6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sqlfence.NormalizeDSN(tc.d, tc.in)
			require.ErrorIs(t, err, sqlfence.ErrInvalidDSN)
			assert.NotContains(t, err.Error(), tc.secret)
			assert.NotContains(t, sqlfence.RedactDSN(tc.in), tc.secret)
			assert.NotContains(t, sqlfence.Scrub(fmt.Errorf("lookup %s: no such host", tc.in), tc.in).Error(), tc.secret)
		})
	}
	for _, ok := range []struct {
		d  sqlfence.Dialect
		in string
	}{
		{sqlfence.Postgres, "postgres://root@127.0.0.1:5432/test?sslmode=disable"},
		{sqlfence.Postgres, "postgresql://u:p%40ss@[::1]:5432/x"},
		{sqlfence.Postgres, "host=db user=u password='se cret' dbname=app sslmode=disable"},
		{sqlfence.Postgres, "host=/var/run/postgresql dbname=app"},
		{sqlfence.MySQL, "root@tcp(127.0.0.1:3306)/test"},
		{sqlfence.MySQL, "app:p@ss:w@tcp(db:3306)/app?parseTime=true"},
		{sqlfence.MySQL, "app:s3cret@unix(/run/mysqld/mysqld.sock)/app"},
		{sqlfence.MySQL, "/app"},
	} {
		got, err := sqlfence.NormalizeDSN(ok.d, ok.in)
		require.NoError(t, err, ok.in)
		require.Equal(t, ok.in, got)
	}
}

func TestScrubNil(t *testing.T) {
	require.NoError(t, sqlfence.Scrub(nil, "postgres://u:p@h/x"))
}

func TestNormalizeDSN(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    sqlfence.Dialect
		in   string
		want string
	}{
		{"path", sqlfence.SQLite, "/tmp/a.db", sqlfence.SQLiteDSN("/tmp/a.db")},
		{"relative path", sqlfence.SQLite, "app.db", sqlfence.SQLiteDSN("app.db")},
		{"uri", sqlfence.SQLite, "file:a.db", "file:a.db?_txlock=immediate&_pragma=busy_timeout(10000)"},
		{"uri with query", sqlfence.SQLite, "file:a.db?mode=rwc", "file:a.db?mode=rwc&_txlock=immediate&_pragma=busy_timeout(10000)"},
		{"uri complete", sqlfence.SQLite, "file:a.db?_txlock=immediate&_pragma=busy_timeout(50)", "file:a.db?_txlock=immediate&_pragma=busy_timeout(50)"},
		{"uri exclusive", sqlfence.SQLite, "file:a.db?_txlock=exclusive", "file:a.db?_txlock=exclusive&_pragma=busy_timeout(10000)"},
		{"idempotent", sqlfence.SQLite, sqlfence.SQLiteDSN("/tmp/a?b.db"), sqlfence.SQLiteDSN("/tmp/a?b.db")},
		{"postgres as given", sqlfence.Postgres, "postgres://u@h/x", "postgres://u@h/x"},
		{"mysql as given", sqlfence.MySQL, "root@tcp(h:3306)/x", "root@tcp(h:3306)/x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sqlfence.NormalizeDSN(tc.d, tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestNormalizeDSNRefuses(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"deferred", "file:a.db?_txlock=deferred", "_txlock=immediate"},
		{"memory", ":memory:", "in-memory"},
		{"memory uri", "file::memory:?cache=shared", "in-memory"},
		{"memory mode", "file:x?mode=memory", "in-memory"},
		{"bad query", "file:a.db?%zz", "sqlite URI"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sqlfence.NormalizeDSN(sqlfence.SQLite, tc.in)
			require.True(t, errors.Is(err, sqlfence.ErrUnsafeDSN), "%v", err)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}
