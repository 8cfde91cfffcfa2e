package boltstore

import (
	"math"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
	"pgregory.net/rapid"
)

func TestBoltstoreCodecRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		log  raft.Log
	}{
		{"zero", raft.Log{}},
		{"command", *testLog(42)},
		{"max indexes", raft.Log{Index: math.MaxUint64, Term: math.MaxUint64, Type: raft.LogType(255)}},
		{"configuration", raft.Log{Index: 1, Term: 1, Type: raft.LogConfiguration, Data: []byte{0, 1, 2}}},
		{"pre-1970 time", raft.Log{Index: 3, AppendedAt: time.Date(1960, 1, 2, 3, 4, 5, 999_999_999, time.UTC)}},
		{"far future time", raft.Log{Index: 4, AppendedAt: time.Date(9999, 12, 31, 23, 59, 59, 1, time.UTC)}},
		{"time with monotonic reading", raft.Log{Index: 5, AppendedAt: time.Now()}},
		{"large data", raft.Log{Index: 6, Data: make([]byte, 1<<20)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := appendLog(nil, &tc.log)
			require.LessOrEqual(t, len(b), encodedSize(&tc.log))
			var got raft.Log
			require.NoError(t, decodeLog(b, &got))
			requireSameLog(t, &tc.log, &got)
		})
	}
}

func TestBoltstoreCodecProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := raft.Log{
			Index:      rapid.Uint64().Draw(t, "index"),
			Term:       rapid.Uint64().Draw(t, "term"),
			Type:       raft.LogType(rapid.Uint8().Draw(t, "type")),
			Data:       rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(t, "data"),
			Extensions: rapid.SliceOfN(rapid.Byte(), 0, 20).Draw(t, "ext"),
		}
		if rapid.Bool().Draw(t, "hasTime") {
			l.AppendedAt = time.Unix(rapid.Int64Range(-1<<40, 1<<40).Draw(t, "sec"),
				rapid.Int64Range(0, int64(time.Second)-1).Draw(t, "nsec"))
		}
		b := appendLog(nil, &l)
		if len(b) > encodedSize(&l) {
			t.Fatalf("encoded %d bytes, bound %d", len(b), encodedSize(&l))
		}
		var got raft.Log
		if err := decodeLog(b, &got); err != nil {
			t.Fatal(err)
		}
		if got.Index != l.Index || got.Term != l.Term || got.Type != l.Type ||
			string(got.Data) != string(l.Data) || string(got.Extensions) != string(l.Extensions) ||
			!got.AppendedAt.Equal(l.AppendedAt) {
			t.Fatalf("round trip: %+v != %+v", got, l)
		}
		// Every strict prefix is rejected, never misread.
		cut := rapid.IntRange(0, len(b)-1).Draw(t, "cut")
		if err := decodeLog(b[:cut], &got); err == nil {
			t.Fatalf("prefix of %d/%d bytes decoded", cut, len(b))
		}
	})
}

func TestBoltstoreCodecRejects(t *testing.T) {
	good := appendLog(nil, testLog(9))
	cases := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"raft-boltdb msgpack map", []byte{0x87, 0xa5, 'I', 'n', 'd', 'e', 'x'}},
		{"unknown version", append([]byte{2}, good[1:]...)},
		{"trailing byte", append(append([]byte{}, good...), 0)},
		{"bad time flag", append(appendLog(nil, &raft.Log{Index: 1})[:len(appendLog(nil, &raft.Log{Index: 1}))-1], 7)},
		{"data longer than value", []byte{1, 1, 1, 0, 50, 'x'}},
		{"overlong varint", []byte{1, 0x80, 0x00, 0, 0, 0, 0, 0}},
		{"varint overflow", []byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
		{"nanoseconds out of range", append(appendLog(nil, &raft.Log{Index: 1})[:len(appendLog(nil, &raft.Log{Index: 1}))-1], 1, 0, 0x80, 0x94, 0xeb, 0xdc, 0x03)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := raft.Log{Index: 77}
			require.Error(t, decodeLog(tc.b, &before))
			require.Equal(t, uint64(77), before.Index, "the target is untouched on error")
		})
	}
}

func TestBoltstoreCorruptValueIsReported(t *testing.T) {
	s := openTemp(t)
	require.NoError(t, s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketLogs).Put(indexKey(3), []byte{0x87, 0x00})
	}))
	var l raft.Log
	err := s.GetLog(3, &l)
	require.ErrorIs(t, err, ErrCorrupt)
	require.Contains(t, err.Error(), "log 3")
}

func FuzzBoltstoreDecode(f *testing.F) {
	f.Add(appendLog(nil, testLog(1)))
	f.Add([]byte{0x87})
	f.Fuzz(func(t *testing.T, b []byte) {
		var l raft.Log
		if decodeLog(b, &l) == nil {
			// What decodes re-encodes to the same bytes: one encoding per log.
			require.Equal(t, b, appendLog(nil, &l))
		}
	})
}
