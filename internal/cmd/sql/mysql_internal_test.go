package sqlcli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// go-sql-driver/mysql's COMMIT does not follow the context: the run's DSN
// gets read and write timeouts unless it sets one.
func TestMySQLTimeouts(t *testing.T) {
	for _, tc := range []struct{ dsn, want string }{
		{"root@tcp(h:3306)/test", "root@tcp(h:3306)/test?readTimeout=4s&writeTimeout=4s"},
		{"root@tcp(h:3306)/test?parseTime=true", "root@tcp(h:3306)/test?parseTime=true&readTimeout=4s&writeTimeout=4s"},
		{"root:p?w@tcp(h:3306)/test", "root:p?w@tcp(h:3306)/test?readTimeout=4s&writeTimeout=4s"},
		{"root@tcp(h:3306)/test?readTimeout=1s", "root@tcp(h:3306)/test?readTimeout=1s"},
		{"root@tcp(h:3306)/test?writeTimeout=1s", "root@tcp(h:3306)/test?writeTimeout=1s"},
	} {
		require.Equal(t, tc.want, mysqlTimeouts(tc.dsn, 4*time.Second), tc.dsn)
	}
	_, dsn, err := Config{Driver: "mysql", DSN: "root@tcp(h:3306)/test", Table: "t", Timeout: 3 * time.Second}.normalize()
	require.NoError(t, err)
	require.Contains(t, dsn, "readTimeout=4s", "a second more than --command-timeout")
}

func TestAbbrev(t *testing.T) {
	require.Equal(t, "UPDATE t SET a = 1", abbrev("UPDATE  t\n\tSET a = 1"))
	long := abbrev("SELECT " + string(make([]byte, 100)))
	require.Len(t, long, 60)
	require.Equal(t, "...", long[57:])
}
