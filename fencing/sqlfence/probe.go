package sqlfence

import (
	"reflect"
	"sync/atomic"
)

// statusProbe reads a driver connection's transaction status as the
// driver last heard it from the server (no round trip), by reflection on
// the driver's types, without importing the driver. The methods and
// fields it goes through are looked up once per connection type and
// kept: looking a method up by name builds its function type each time
// (reflect.FuncOf), which cost more client CPU per transaction than the
// rest of the fence check together. The zero value is ready to use; it is
// safe for concurrent use.
type statusProbe struct {
	path atomic.Pointer[probePath]
}

// probePath is how to reach the status from one connection type: pgx
// through three methods (Conn, PgConn, TxStatus), go-sql-driver through
// one field (status). ok is false when the type is neither.
type probePath struct {
	typ     reflect.Type
	ok      bool
	methods []int // pgx: method indices, each on the previous one's result
	field   []int // go-sql-driver: the status field's index
}

// lookup returns the path for dc's type, building it on first use (and
// again if the type changes, which one *sql.DB's driver does not do).
func (p *statusProbe) lookup(dc any, build func(reflect.Type) probePath) *probePath {
	typ := reflect.TypeOf(dc)
	if cur := p.path.Load(); cur != nil && cur.typ == typ {
		return cur
	}
	np := build(typ)
	np.typ = typ
	p.path.Store(&np)
	return &np
}

// pgxTxStatus returns pgconn's transaction status ('I' idle, 'T' in a
// transaction, 'E' in a failed one) of a github.com/jackc/pgx/v5/stdlib
// connection — dc.Conn().PgConn().TxStatus() — without importing pgx; ok
// is false for another driver.
func (p *statusProbe) pgxTxStatus(dc any) (status byte, ok bool) {
	if dc == nil {
		return 0, false
	}
	path := p.lookup(dc, pgxPath)
	if !path.ok {
		return 0, false
	}
	v := reflect.ValueOf(dc)
	for _, i := range path.methods {
		v = v.Method(i).Call(nil)[0]
		if v.Kind() == reflect.Pointer && v.IsNil() {
			return 0, false
		}
	}
	return byte(v.Uint()), true
}

// pgxPath finds Conn() → PgConn() → TxStatus() byte on typ.
func pgxPath(typ reflect.Type) probePath {
	var methods []int
	t := typ
	for i, name := range []string{"Conn", "PgConn", "TxStatus"} {
		m, ok := t.MethodByName(name)
		if !ok || m.Type.NumIn() != 1 || m.Type.NumOut() != 1 { // NumIn counts the receiver
			return probePath{}
		}
		t = m.Type.Out(0)
		if i < 2 && t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface {
			return probePath{}
		}
		methods = append(methods, m.Index)
	}
	if t.Kind() != reflect.Uint8 {
		return probePath{}
	}
	return probePath{ok: true, methods: methods}
}

// mysqlInTransaction returns 1 if a github.com/go-sql-driver/mysql
// connection is in a transaction, 0 if not, by the server's
// SERVER_STATUS_IN_TRANS flag that came with the last OK packet (the
// driver keeps it in its connection's status field), so no round trip;
// known is false for another driver or a version without that field.
// An error packet carries no status: after a failed last statement the
// flag is the one before it (fn that returns nil after such an error has
// a deadlock's rollback go unnoticed here; @@in_transaction would see it).
func (p *statusProbe) mysqlInTransaction(dc any) (in int, known bool) {
	if dc == nil {
		return 0, false
	}
	path := p.lookup(dc, mysqlPath)
	if !path.ok {
		return 0, false
	}
	v := reflect.ValueOf(dc)
	if v.IsNil() {
		return 0, false
	}
	const serverStatusInTrans = 1 // SERVER_STATUS_IN_TRANS
	if v.Elem().FieldByIndex(path.field).Uint()&serverStatusInTrans != 0 {
		return 1, true
	}
	return 0, true
}

// mysqlPath finds go-sql-driver's *mysqlConn and its status uint16.
func mysqlPath(typ reflect.Type) probePath {
	if typ.Kind() != reflect.Pointer {
		return probePath{}
	}
	t := typ.Elem()
	if t.Kind() != reflect.Struct || t.Name() != "mysqlConn" || t.PkgPath() != "github.com/go-sql-driver/mysql" {
		return probePath{}
	}
	f, ok := t.FieldByName("status")
	if !ok || f.Type.Kind() != reflect.Uint16 {
		return probePath{}
	}
	return probePath{ok: true, field: f.Index}
}
