package sqlfence

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Stand-ins with pgx's shape (Conn → PgConn → TxStatus).
type fakePgConn struct{ st byte }

func (c *fakePgConn) TxStatus() byte { return c.st }

type fakePgxConn struct{ pc *fakePgConn }

func (c *fakePgxConn) PgConn() *fakePgConn { return c.pc }

type fakeStdlibConn struct{ c *fakePgxConn }

func (c *fakeStdlibConn) Conn() *fakePgxConn { return c.c }

type notADriverConn struct{}

// The probe follows pgx's methods, caches the way per type, answers for
// a new type after another, and says "not known" for a type of another
// shape or a nil along the way.
func TestStatusProbe(t *testing.T) {
	var p statusProbe
	pc := &fakePgConn{st: 'T'}
	dc := &fakeStdlibConn{c: &fakePgxConn{pc: pc}}
	for _, want := range []byte{'T', 'E', 'I'} {
		pc.st = want
		st, ok := p.pgxTxStatus(dc)
		require.True(t, ok)
		require.Equal(t, want, st)
	}
	first := p.path.Load()
	_, _ = p.pgxTxStatus(dc)
	require.Same(t, first, p.path.Load(), "the way is looked up once per type")

	_, ok := p.pgxTxStatus(&notADriverConn{})
	require.False(t, ok)
	_, ok = p.pgxTxStatus(&fakeStdlibConn{c: &fakePgxConn{}}) // PgConn() is nil
	require.False(t, ok)
	_, ok = p.pgxTxStatus(nil)
	require.False(t, ok)
	_, known := p.mysqlInTransaction(&notADriverConn{})
	require.False(t, known)
	st, ok := p.pgxTxStatus(dc) // back to the first type
	require.True(t, ok)
	require.Equal(t, byte('I'), st)
}
