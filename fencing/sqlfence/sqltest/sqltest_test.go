package sqltest

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/coordkit/coordkit/fencing/sqlfence"
)

func TestWithDatabase(t *testing.T) {
	for _, tc := range []struct {
		d          sqlfence.Dialect
		base, want string
	}{
		{sqlfence.Postgres, "postgres://root@127.0.0.1:5432/test?sslmode=disable", "postgres://root@127.0.0.1:5432/x?sslmode=disable"},
		{sqlfence.Postgres, "postgresql://u:p@h/", "postgresql://u:p@h/x"},
		{sqlfence.Postgres, "host=h user=u dbname=test", "host=h user=u dbname=test dbname=x"},
		{sqlfence.MySQL, "root@tcp(127.0.0.1:3306)/test", "root@tcp(127.0.0.1:3306)/x"},
		{sqlfence.MySQL, "u:p@tcp(h:3306)/?parseTime=true", "u:p@tcp(h:3306)/x?parseTime=true"},
	} {
		got, err := withDatabase(tc.d, tc.base, "x")
		if err != nil || got != tc.want {
			t.Errorf("withDatabase(%v, %q) = %q, %v; want %q", tc.d, tc.base, got, err, tc.want)
		}
	}
	if _, err := withDatabase(sqlfence.MySQL, "not a dsn", "x"); err == nil {
		t.Error("bad MySQL DSN accepted")
	}
}

func TestRebind(t *testing.T) {
	pg := &DB{Dialect: sqlfence.Postgres}
	if got := pg.Rebind("a = ? AND b = ?"); got != "a = $1 AND b = $2" {
		t.Errorf("postgres: %q", got)
	}
	my := &DB{Dialect: sqlfence.MySQL}
	if got := my.Rebind("a = ?"); got != "a = ?" {
		t.Errorf("mysql: %q", got)
	}
}

// TestHelperOpen is run by TestUnansweringServer in a child process.
func TestHelperOpen(t *testing.T) {
	if os.Getenv("SQLTEST_HELPER") != "1" {
		t.Skip("run by TestUnansweringServer")
	}
	Open(t, sqlfence.Postgres)
	Open(t, sqlfence.MySQL)
}

// A set variable whose server does not answer fails under CI=true and
// skips otherwise; an unset one skips naming the variable.
func TestUnansweringServer(t *testing.T) {
	dead := []string{PostgresEnv + "=postgres://u@127.0.0.1:1/x?sslmode=disable&connect_timeout=5", MySQLEnv + "=u@tcp(127.0.0.1:1)/x"}
	for _, tc := range []struct {
		name     string
		env      []string
		fails    bool
		mentions string
	}{
		{"CI fails", append([]string{"CI=true"}, dead...), true, PostgresEnv + " is set but its server does not answer"},
		{"elsewhere skips", append([]string{"CI="}, dead...), false, "(a failure under CI=true)"},
		{"unset skips", []string{"CI=true", PostgresEnv + "=", MySQLEnv + "="}, false, PostgresEnv + " is not set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperOpen$", "-test.v")
			cmd.Env = append(append(os.Environ(), "SQLTEST_HELPER=1"), tc.env...)
			out, err := cmd.CombinedOutput()
			if (err != nil) != tc.fails {
				t.Fatalf("child err = %v, want failure %v:\n%s", err, tc.fails, out)
			}
			if !strings.Contains(string(out), tc.mentions) {
				t.Fatalf("child output does not mention %q:\n%s", tc.mentions, out)
			}
		})
	}
}
