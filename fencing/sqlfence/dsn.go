package sqlfence

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// NormalizeDSN returns the data source name to open for d. For SQLite it
// makes every transaction begin IMMEDIATE with a busy timeout: a plain
// path goes through SQLiteDSN; a file: URI gets _txlock=immediate and
// _pragma=busy_timeout(10000) added when missing. A URI asking for another
// _txlock than immediate or exclusive is refused, since the check is not
// safe with deferred transactions; so is an in-memory database, which no
// other process can see. Both errors wrap ErrUnsafeDSN. It is idempotent.
// Other dialects' DSNs are returned as given.
func NormalizeDSN(d Dialect, dsn string) (string, error) {
	if d != SQLite {
		return dsn, nil
	}
	if dsn == ":memory:" || strings.HasPrefix(dsn, "file::memory:") || strings.Contains(dsn, "mode=memory") {
		return "", fmt.Errorf("%w: an in-memory SQLite database lives and dies with one process: nothing to fence", ErrUnsafeDSN)
	}
	if !strings.HasPrefix(dsn, "file:") {
		return SQLiteDSN(dsn), nil
	}
	base, rawQuery, _ := strings.Cut(dsn, "?")
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return "", fmt.Errorf("%w: sqlite URI %q: %v", ErrUnsafeDSN, dsn, err)
	}
	switch lock := q.Get("_txlock"); lock {
	case "":
		rawQuery = joinQuery(rawQuery, "_txlock=immediate")
	case "immediate", "exclusive":
	default:
		return "", fmt.Errorf("%w: sqlite URI with _txlock=%s: fencing needs _txlock=immediate (or drop the parameter and it is added)", ErrUnsafeDSN, lock)
	}
	busy := false
	for _, p := range q["_pragma"] {
		busy = busy || strings.HasPrefix(strings.ToLower(strings.TrimSpace(p)), "busy_timeout")
	}
	if !busy {
		rawQuery = joinQuery(rawQuery, "_pragma=busy_timeout(10000)")
	}
	return base + "?" + rawQuery, nil
}

func joinQuery(q, kv string) string {
	if q == "" {
		return kv
	}
	return q + "&" + kv
}

// redacted replaces a password wherever a DSN or an error would show it.
const redacted = "xxxxx"

var (
	// key=value form (pgx, lib/pq): password=secret or password='se cret'.
	kvPasswordRE = regexp.MustCompile(`(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s]+)`)
	// go-sql-driver/mysql form: user:pass@proto(addr)/db; the password may
	// contain '@', the driver splits at the last one.
	mysqlUserRE = regexp.MustCompile(`^([^:@/]*):(.*)@([a-z0-9]*\(|/)`)
	// mysqlNetRE is the part between the '@' and the '/' of the mysql
	// form: empty, a network alone, or a network with its address.
	mysqlNetRE = regexp.MustCompile(`^(|tcp|unix|[a-z0-9]+\(.*\))$`)
)

// RedactDSN returns dsn with its password replaced by xxxxx, in the URL
// form (postgres://u:p@h/db, also ?password=), the key=value form
// (password=p) and go-sql-driver/mysql's (u:p@tcp(h)/db). A DSN without
// a password is returned as given.
func RedactDSN(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" && strings.Contains(dsn, "://") {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), redacted)
		}
		q := u.Query()
		if q.Has("password") {
			q.Set("password", redacted)
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	if pw, ok := mysqlPassword(dsn); ok && pw != "" && mysqlUserRE.MatchString(dsn) {
		return mysqlUserRE.ReplaceAllString(dsn, "${1}:"+redacted+"@${3}")
	}
	return kvPasswordRE.ReplaceAllString(dsn, "${1}"+redacted)
}

// mysqlPassword finds the password of a go-sql-driver/mysql DSN,
// [user[:password]@][net[(addr)]]/dbname[?params], splitting it as the
// driver does: at the last '/', the last '@' before it and the first ':'
// before that. ok is false when dsn does not have that shape. The
// parameters are not checked, so that a DSN the driver refuses for a bad
// parameter is still redacted.
func mysqlPassword(dsn string) (pw string, ok bool) {
	slash := strings.LastIndexByte(dsn, '/')
	if slash < 0 {
		return "", false
	}
	at := strings.LastIndexByte(dsn[:slash], '@')
	if at < 0 || !mysqlNetRE.MatchString(dsn[at+1:slash]) {
		return "", false
	}
	_, pw, found := strings.Cut(dsn[:at], ":")
	return pw, found
}

// dsnSecrets returns the passwords in dsn (in each form RedactDSN knows),
// to scrub them from drivers' error texts.
func dsnSecrets(dsn string) []string {
	var out []string
	add := func(s string) {
		if s != "" && s != redacted {
			out = append(out, s)
			if u, err := url.PathUnescape(s); err == nil && u != s {
				out = append(out, u)
			}
		}
	}
	if u, err := url.Parse(dsn); err == nil && strings.Contains(dsn, "://") {
		if p, ok := u.User.Password(); ok {
			add(p)
			// as written in dsn, where a driver's error would quote it
			_, raw, _ := strings.Cut(u.User.String(), ":")
			add(raw)
		}
		add(u.Query().Get("password"))
	}
	if pw, ok := mysqlPassword(dsn); ok {
		add(pw)
	}
	for _, m := range kvPasswordRE.FindAllStringSubmatch(dsn, -1) {
		add(strings.Trim(m[2], "'"))
	}
	return out
}

// Scrub returns err with every password of dsn (in each form RedactDSN
// knows) replaced by xxxxx in its text, for drivers whose errors quote
// the DSN. The result keeps err's identity: errors.Is and errors.As see
// err. A nil err, or one whose text holds no password, is returned as is.
func Scrub(err error, dsn string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, s := range dsnSecrets(dsn) {
		msg = strings.ReplaceAll(msg, s, redacted)
	}
	if msg == err.Error() {
		return err
	}
	return &scrubbedError{msg: msg, err: err}
}

type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }
