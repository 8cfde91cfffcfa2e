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
//
// Other dialects' DSNs are returned as given once they parse the way their
// driver parses them: for Postgres a postgres:// or postgresql:// URL or
// pgx's key=value form, for MySQL go-sql-driver/mysql's
// [user[:password]@][net[(addr)]]/dbname[?params]. One that does not gives
// an error wrapping ErrInvalidDSN whose text never shows the DSN (it may be
// a password typed in the wrong place).
func NormalizeDSN(d Dialect, dsn string) (string, error) {
	switch d {
	case Postgres:
		// pgx's rule: the URL prefix means a URL, anything else key=value.
		isURL := strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
		if isURL && dsnForm(dsn) != urlForm {
			return "", fmt.Errorf("%w: a postgres:// URL that does not parse (the DSN is not shown: it may hold a password)", ErrInvalidDSN)
		}
		if !isURL && !kvParses(dsn) {
			return "", fmt.Errorf("%w: neither a postgres:// URL nor key=value pairs (the DSN is not shown: it may hold a password)", ErrInvalidDSN)
		}
		return dsn, nil
	case MySQL:
		if _, ok := mysqlPassword(dsn); !ok {
			return "", fmt.Errorf("%w: not user:password@net(addr)/dbname (the DSN is not shown: it may hold a password)", ErrInvalidDSN)
		}
		return dsn, nil
	case SQLite:
	default:
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
	// kvKeyRE is a key of the key=value form (a setting's name).
	kvKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.]*$`)
)

// unparsable is what RedactDSN shows instead of a DSN it cannot parse.
const unparsable = "xxxxx (a DSN that cannot be parsed is not shown)"

// The shapes of DSN that RedactDSN and Scrub know.
type form int

const (
	unknownForm form = iota
	urlForm          // scheme://[user[:password]@]host/...
	mysqlForm        // go-sql-driver/mysql's user:password@net(addr)/db
	kvForm           // key=value pairs (pgx, lib/pq)
	pathForm         // a SQLite path or file: URI: no credentials
)

// parseURL parses dsn as a URL with a scheme and "://".
func parseURL(dsn string) (*url.URL, bool) {
	if !strings.Contains(dsn, "://") {
		return nil, false
	}
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" || !strings.HasPrefix(dsn, u.Scheme+"://") {
		return nil, false
	}
	return u, true
}

// dsnForm tells which shape dsn has. Anything with "://" that is not a
// URL, and anything with an '@' that is neither a URL nor MySQL's form nor
// a path, is unknownForm: it may be a password in the wrong place.
func dsnForm(dsn string) form {
	if strings.Contains(dsn, "://") {
		if _, ok := parseURL(dsn); ok {
			return urlForm
		}
		return unknownForm
	}
	if _, ok := mysqlPassword(dsn); ok {
		return mysqlForm
	}
	if strings.Contains(dsn, "=") && kvParses(dsn) && !strings.HasPrefix(dsn, "file:") {
		return kvForm
	}
	if strings.HasPrefix(dsn, "/") || strings.HasPrefix(dsn, "./") || strings.HasPrefix(dsn, "../") ||
		strings.HasPrefix(dsn, "file:") || !strings.ContainsAny(dsn, "@ \t\n") {
		return pathForm
	}
	return unknownForm
}

// kvParses reports whether s is key=value pairs as pgx reads them: keys
// up to '=', values unquoted up to white space (backslash escapes) or in
// single quotes (backslash escapes), separated by white space.
func kvParses(s string) bool {
	const space = " \t\n\r\v\f"
	s = strings.Trim(s, space)
	if s == "" {
		return false
	}
	for len(s) > 0 {
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			return false
		}
		if !kvKeyRE.MatchString(strings.Trim(s[:eq], space)) {
			return false
		}
		s = strings.TrimLeft(s[eq+1:], space)
		if len(s) > 0 && s[0] == '\'' {
			end := 1
			for ; end < len(s) && s[end] != '\''; end++ {
				if s[end] == '\\' {
					end++
				}
			}
			if end >= len(s) {
				return false // unterminated quote
			}
			s = s[end+1:]
		} else {
			end := 0
			for ; end < len(s) && !strings.ContainsRune(space, rune(s[end])); end++ {
				if s[end] == '\\' {
					end++
				}
			}
			if end > len(s) {
				return false // a trailing backslash
			}
			s = s[end:]
		}
		if len(s) > 0 && !strings.ContainsRune(space, rune(s[0])) {
			return false
		}
		s = strings.TrimLeft(s, space)
	}
	return true
}

// RedactDSN returns dsn with its password replaced by xxxxx, in the URL
// form (postgres://u:p@h/db, also ?password=), the key=value form
// (password=p) and go-sql-driver/mysql's (u:p@tcp(h)/db). A DSN without
// a password is returned as given. A DSN that has none of these shapes
// and is not a file path (a URL that does not parse, an '@' where no
// form has one) is not shown at all: it is replaced by a note saying so.
func RedactDSN(dsn string) string {
	switch dsnForm(dsn) {
	case unknownForm:
		return unparsable
	case pathForm:
		return dsn
	}
	if u, ok := parseURL(dsn); ok {
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
	if slash < 0 || strings.Contains(dsn, "://") {
		return "", false
	}
	at := strings.LastIndexByte(dsn[:slash], '@')
	if !mysqlNetRE.MatchString(dsn[at+1 : slash]) {
		return "", false
	}
	if _, err := url.PathUnescape(strings.SplitN(dsn[slash+1:], "?", 2)[0]); err != nil {
		return "", false
	}
	if at < 0 {
		return "", true
	}
	_, pw, _ = strings.Cut(dsn[:at], ":")
	return pw, true
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
	if dsnForm(dsn) == unknownForm {
		// Nothing is known of its shape: every piece of it is a secret.
		add(dsn)
		for _, piece := range strings.FieldsFunc(dsn, func(r rune) bool { return strings.ContainsRune("@:/()?&=,[] \t\n", r) }) {
			if len(piece) >= 3 {
				add(piece)
			}
		}
		return out
	}
	if u, ok := parseURL(dsn); ok {
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
