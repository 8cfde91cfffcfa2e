package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// logVersion is the first byte of every encoded log; see the package doc.
const logVersion = 1

var (
	errShort    = errors.New("value ends early")
	errTrailing = errors.New("trailing bytes")
)

// encodedSize is an upper bound of the encoded length of l.
func encodedSize(l *raft.Log) int {
	const hdr = 1 + 3*binary.MaxVarintLen64 + 1 + 2*binary.MaxVarintLen64 + 1 + 2*binary.MaxVarintLen64
	return hdr + len(l.Data) + len(l.Extensions)
}

// appendLog appends the encoding of l to b.
func appendLog(b []byte, l *raft.Log) []byte {
	b = append(b, logVersion)
	b = binary.AppendUvarint(b, l.Index)
	b = binary.AppendUvarint(b, l.Term)
	b = append(b, byte(l.Type))
	b = binary.AppendUvarint(b, uint64(len(l.Data)))
	b = append(b, l.Data...)
	b = binary.AppendUvarint(b, uint64(len(l.Extensions)))
	b = append(b, l.Extensions...)
	if l.AppendedAt.IsZero() {
		return append(b, 0)
	}
	b = append(b, 1)
	b = binary.AppendVarint(b, l.AppendedAt.Unix())
	return binary.AppendUvarint(b, uint64(l.AppendedAt.Nanosecond()))
}

// decodeLog decodes b into l. Data and Extensions are copied out of b,
// which bbolt owns.
func decodeLog(b []byte, l *raft.Log) error {
	d := decoder{b: b}
	if v := d.byte(); d.err == nil && v != logVersion {
		return fmt.Errorf("unknown encoding version 0x%02x", v)
	}
	out := raft.Log{
		Index: d.uvarint(),
		Term:  d.uvarint(),
		Type:  raft.LogType(d.byte()),
	}
	out.Data = d.bytes()
	out.Extensions = d.bytes()
	switch d.byte() {
	case 0:
	case 1:
		sec := d.varint()
		nsec := d.uvarint()
		if d.err == nil && nsec >= uint64(time.Second) {
			return fmt.Errorf("nanoseconds %d out of range", nsec)
		}
		out.AppendedAt = time.Unix(sec, int64(nsec))
	default:
		if d.err == nil {
			return errors.New("bad time flag")
		}
	}
	if d.err != nil {
		return d.err
	}
	if len(d.b) != 0 {
		return errTrailing
	}
	*l = out
	return nil
}

// decoder reads from b; the first failure sticks in err and later reads
// return zero values.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.err = errShort
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if d.check(n) != nil {
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if d.check(n) != nil {
		return 0
	}
	d.b = d.b[n:]
	return v
}

// bytes reads a length-prefixed byte string and returns a copy, nil if
// empty.
func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil || n == 0 {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = errShort
		return nil
	}
	v := append([]byte(nil), d.b[:n]...)
	d.b = d.b[n:]
	return v
}

// check records why a varint of n bytes at the head of b is unreadable.
// Overlong forms (a final byte of 0 after the first) are refused so that
// every log has exactly one encoding.
func (d *decoder) check(n int) error {
	switch {
	case n == 0:
		d.err = errShort
	case n < 0:
		d.err = errors.New("varint overflows 64 bits")
	case n > 1 && d.b[n-1] == 0:
		d.err = errors.New("overlong varint")
	}
	return d.err
}
