package sqlfence

import "strings"

// TransactionControl returns the first statement of sql (which may hold
// several, separated by ';') that would end the transaction it runs in or
// change how it commits, named by its leading words ("COMMIT", "START
// TRANSACTION", "SET TRANSACTION", on MySQL "CREATE TABLE"), and true; ""
// and false when there is none. 'coordctl sql' refuses such statements:
// inside the fenced transaction they would commit it early, and what
// follows would run outside the fence.
//
// Refused on every engine: BEGIN, START, COMMIT, END, ROLLBACK (but not
// ROLLBACK TO a savepoint), ABORT, PREPARE TRANSACTION, COMMIT/ROLLBACK
// PREPARED, XA, SET TRANSACTION, SET SESSION TRANSACTION, SET ...
// autocommit. On MySQL also the statements that commit implicitly: DDL
// (ALTER, CREATE and DROP except of TEMPORARY tables, RENAME, TRUNCATE),
// GRANT, REVOKE, LOCK, UNLOCK, ANALYZE, CHECK, OPTIMIZE, REPAIR, CACHE,
// LOAD INDEX, FLUSH, RESET, INSTALL, UNINSTALL, SET PASSWORD. SAVEPOINT,
// RELEASE and ROLLBACK TO stay inside the transaction, after the check,
// and are allowed. Words in comments, strings and quoted identifiers are
// not read as statements; MySQL's and MariaDB's executable comments (/*!
// ... */, /*M! ... */) are. Where a string ends depends on settings the
// text does not show (PostgreSQL's standard_conforming_strings, MySQL's
// NO_BACKSLASH_ESCAPES and ANSI_QUOTES, which an earlier statement or the
// DSN may set), so sql is read both with and without backslash escapes,
// and a statement found by either reading counts (on MySQL also a third:
// ANSI_QUOTES alone, a backslash escaping in '...' but not in "..."; and a
// fourth: a multi-byte client character set such as gbk, where a backslash
// after a byte >= 0x80 may be a character's second byte). MariaDB's SET
// STATEMENT ... FOR stmt is read as stmt. With multiStatements=true MySQL
// reads each statement after running the one before, so a SET of sql_mode
// or of the client character set (NAMES, CHARACTER SET) followed by
// another statement in the same text is refused too (as "SET SQL_MODE"):
// give it its own -e.
// A statement that commits from inside something it calls (a MySQL stored
// procedure running DDL) is not seen here; Do's check before COMMIT
// reports it (ErrOutsideFence).
func (d Dialect) TransactionControl(sql string) (string, bool) {
	readings := []reading{{}, {backslash: true}}
	switch d {
	case SQLite:
		readings = readings[:1] // SQLite has no backslash escapes
	case MySQL:
		readings = append(readings, reading{backslash: true, ansiQuotes: true}, reading{backslash: true, multibyte: true})
	}
	for _, r := range readings {
		sts := d.statementWords(sql, r)
		for i, st := range sts {
			if name, ok := d.txControl(st); ok {
				return name, true
			}
			if st.lexical != "" && i < len(sts)-1 {
				// MySQL reads each statement of a multi-statement query
				// after running the one before: what follows is read
				// under a mode no reading here knows.
				return "SET " + st.lexical, true
			}
		}
	}
	return "", false
}

// reading is one way of telling where a string ends: backslash, whether
// a backslash escapes the next byte; ansiQuotes (MySQL's ANSI_QUOTES),
// "..." is an identifier, where it does not; multibyte, a backslash right
// after a byte >= 0x80 is the second byte of a character (MySQL with a
// client character set such as gbk, sjis or big5), not an escape.
type reading struct{ backslash, ansiQuotes, multibyte bool }

// stmtWords is what statementWords reads of one statement: its leading
// words, and whether a word of it names autocommit.
type stmtWords struct {
	lead       []string
	autocommit string
	setFor     bool   // the statement after SET STATEMENT ... FOR
	lexical    string // MySQL: a word of a SET that changes how SQL text is read (SQL_MODE, NAMES, ...)
}

func (d Dialect) txControl(st stmtWords) (string, bool) {
	w := st.lead
	if len(w) == 0 {
		return "", false
	}
	word := func(i int) string {
		if i < len(w) {
			return w[i]
		}
		return ""
	}
	name := func(n int) string { return strings.Join(w[:min(n, len(w))], " ") }
	switch w[0] {
	case "BEGIN", "START", "END", "ABORT", "XA":
		return name(2), true
	case "COMMIT":
		return name(2), true
	case "ROLLBACK":
		i := 1
		if word(i) == "WORK" || word(i) == "TRANSACTION" {
			i++
		}
		if word(i) == "TO" {
			return "", false // to a savepoint: the transaction goes on
		}
		return name(2), true
	case "PREPARE":
		if word(1) == "TRANSACTION" {
			return name(2), true
		}
	case "SET":
		for i, x := range w[1:] {
			switch {
			case x == "TRANSACTION" && i <= 1, x == "CHARACTERISTICS" && i == 1:
				return name(i + 2), true
			case x == "PASSWORD" && i == 0 && d == MySQL:
				return name(2), true
			}
		}
		if st.autocommit != "" {
			// Anywhere in the statement: SET @a = 1, autocommit = 1.
			return "SET " + st.autocommit, true
		}
	}
	if d != MySQL {
		return "", false
	}
	switch w[0] {
	case "CREATE", "DROP":
		if word(1) == "TEMPORARY" {
			return "", false
		}
		return name(2), true
	case "ALTER", "RENAME", "TRUNCATE", "GRANT", "REVOKE", "LOCK", "UNLOCK", "ANALYZE",
		"CHECK", "OPTIMIZE", "REPAIR", "CACHE", "FLUSH", "RESET", "INSTALL", "UNINSTALL":
		return name(2), true
	case "LOAD":
		if word(1) == "INDEX" {
			return name(2), true
		}
	}
	return "", false
}

// statementWords splits sql into statements at ';' and returns the
// leading words (upper case, at most four) of each, skipping comments,
// white space and opening parentheses. A string or quoted identifier ends
// a statement's leading words. backslash says whether a backslash escapes
// the next byte in a '...' string (and on MySQL a "..." one): on MySQL
// unless NO_BACKSLASH_ESCAPES, on PostgreSQL when
// standard_conforming_strings is off (in E'...' always).
// ansiQuotes (MySQL's ANSI_QUOTES) makes "..." an identifier, where a
// backslash does not escape.
func (d Dialect) statementWords(sql string, r reading) []stmtWords {
	backslash := r.backslash
	var out []stmtWords
	var cur stmtWords
	more := true // still collecting this statement's leading words
	flush := func() {
		if len(cur.lead) > 0 {
			out = append(out, cur)
		}
		cur, more = stmtWords{}, true
	}
	isWord := func(c byte) bool {
		return c == '_' || c == '@' || c == '.' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
	}
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == ';':
			flush()
			i++
		case c == '-' && strings.HasPrefix(sql[i:], "--") && (d != MySQL || i+2 == len(sql) || sql[i+2] <= ' '), c == '#' && d == MySQL:
			// MySQL reads "--" as a comment only before white space or a
			// control character: 1--1 is 1 - -1.
			if j := strings.IndexByte(sql[i:], '\n'); j >= 0 {
				i += j + 1
			} else {
				i = len(sql)
			}
		case c == '/' && (strings.HasPrefix(sql[i:], "/*!") || strings.HasPrefix(sql[i:], "/*M!")) && d == MySQL:
			// MySQL (and MariaDB, /*M!) runs what is inside: read it as code.
			i += strings.IndexByte(sql[i:], '!') + 1
			for i < len(sql) && sql[i] >= '0' && sql[i] <= '9' {
				i++
			}
		case c == '*' && strings.HasPrefix(sql[i:], "*/") && d == MySQL:
			i += 2 // the end of an executable comment
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			i = skipBlockComment(sql, i, d == Postgres)
		case c == '\'' || c == '"' || c == '`':
			more = false
			// PostgreSQL's E'...' escapes whatever the settings say; the E
			// must stand alone (name'\' is a string after a type name).
			estring := d == Postgres && c == '\'' && i > 0 && (sql[i-1] == 'E' || sql[i-1] == 'e') && (i == 1 || !isWord(sql[i-2]))
			i = skipQuoted(sql, i, c, backslash && (d == MySQL && (c == '\'' || c == '"' && !r.ansiQuotes) || d == Postgres && c == '\'') || estring, r.multibyte)
		case c == '[' && d == SQLite:
			// SQLite's [quoted identifier]: no escapes, ends at the first ].
			more = false
			if j := strings.IndexByte(sql[i:], ']'); j >= 0 {
				i += j + 1
			} else {
				i = len(sql)
			}
		case c == '$' && d == Postgres && (i == 0 || !isWord(sql[i-1])):
			if j, ok := skipDollarQuoted(sql, i); ok {
				more = false
				i = j
			} else {
				i++
			}
		case isWord(c):
			j := i
			for j < len(sql) && isWord(sql[j]) {
				j++
			}
			word := strings.ToUpper(sql[i:j])
			if d == MySQL && word == "FOR" && len(cur.lead) >= 2 && cur.lead[0] == "SET" && cur.lead[1] == "STATEMENT" && !cur.setFor {
				// MariaDB's SET STATEMENT var = value [, ...] FOR stmt
				// runs stmt: read its words as the statement's.
				cur = stmtWords{setFor: true}
				more = true
				i = j
				continue
			}
			if more && len(cur.lead) < 4 {
				cur.lead = append(cur.lead, word)
			}
			if name := strings.TrimPrefix(word, "@@"); name[strings.LastIndexByte(name, '.')+1:] == "AUTOCOMMIT" && cur.autocommit == "" {
				cur.autocommit = word
			}
			switch strings.TrimPrefix(word, "@@") {
			case "SQL_MODE", "SESSION.SQL_MODE", "LOCAL.SQL_MODE", "NAMES", "CHARSET", "CHARACTER", "CHARACTER_SET_CLIENT", "SESSION.CHARACTER_SET_CLIENT", "LOCAL.CHARACTER_SET_CLIENT":
				if d == MySQL && len(cur.lead) > 0 && cur.lead[0] == "SET" && cur.lexical == "" {
					cur.lexical = word
				}
			}
			i = j
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == '(' && len(cur.lead) == 0:
			i++
		default:
			more = false
			i++
		}
	}
	flush()
	return out
}

// skipBlockComment returns the index after the /* */ comment at i
// (PostgreSQL's nest).
func skipBlockComment(s string, i int, nested bool) int {
	depth := 0
	for i < len(s) {
		switch {
		case strings.HasPrefix(s[i:], "/*"):
			if depth == 0 || nested {
				depth++
			}
			i += 2
		case strings.HasPrefix(s[i:], "*/"):
			depth--
			i += 2
			if depth == 0 {
				return i
			}
		default:
			i++
		}
	}
	return i
}

// skipQuoted returns the index after the string or identifier opened by q
// at i; a doubled quote stands for itself, and with backslash a '\'
// escapes the next byte (with multibyte, not right after a byte >= 0x80).
func skipQuoted(s string, i int, q byte, backslash, multibyte bool) int {
	for i++; i < len(s); i++ {
		switch {
		case backslash && s[i] == '\\' && !(multibyte && s[i-1] >= 0x80):
			i++
		case s[i] == q:
			if i+1 < len(s) && s[i+1] == q {
				i++
				continue
			}
			return i + 1
		}
	}
	return i
}

// skipDollarQuoted returns the index after PostgreSQL's $tag$...$tag$ at
// i, or false if no dollar quote starts there.
func skipDollarQuoted(s string, i int) (int, bool) {
	j := i + 1
	for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || j > i+1 && s[j] >= '0' && s[j] <= '9') {
		j++
	}
	if j >= len(s) || s[j] != '$' {
		return 0, false
	}
	tag := s[i : j+1]
	if k := strings.Index(s[j+1:], tag); k >= 0 {
		return j + 1 + k + len(tag), true
	}
	return len(s), true
}
