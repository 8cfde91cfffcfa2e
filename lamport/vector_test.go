package lamport

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLamportVectorCompare(t *testing.T) {
	v := func(m map[NodeID]Time) Vector { return NewVector(m) }
	cases := []struct {
		name string
		a, b Vector
		want Ordering
	}{
		{"empty equal", Vector{}, v(nil), Equal},
		{"zero entries ignored", v(map[NodeID]Time{"A": 0}), Vector{}, Equal},
		{"equal", v(map[NodeID]Time{"A": 2, "B": 1}), v(map[NodeID]Time{"B": 1, "A": 2}), Equal},
		{"before", v(map[NodeID]Time{"A": 1}), v(map[NodeID]Time{"A": 2, "B": 2}), Before},
		{"before on missing node", v(map[NodeID]Time{"A": 2}), v(map[NodeID]Time{"A": 2, "B": 1}), Before},
		{"after", v(map[NodeID]Time{"A": 2, "B": 2}), v(map[NodeID]Time{"A": 2}), After},
		{"concurrent", v(map[NodeID]Time{"A": 1}), v(map[NodeID]Time{"B": 1}), Concurrent},
		{"concurrent mixed", v(map[NodeID]Time{"A": 2, "B": 1}), v(map[NodeID]Time{"A": 1, "B": 2}), Concurrent},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.a.Compare(tc.b))
			inverse := map[Ordering]Ordering{Equal: Equal, Before: After, After: Before, Concurrent: Concurrent}
			require.Equal(t, inverse[tc.want], tc.b.Compare(tc.a))
		})
	}
}

func TestLamportVectorNoAliasing(t *testing.T) {
	src := map[NodeID]Time{"A": 1}
	a := NewVector(src)
	src["A"] = 99 // the caller's map is not the vector's
	require.Equal(t, Time(1), a.Get("A"))

	b := a // a plain copy
	c := b.Increment("A")
	d := b.Merge(NewVector(map[NodeID]Time{"B": 5}))
	require.Equal(t, "{A:1}", a.String(), "Increment and Merge must not change their receiver")
	require.Equal(t, "{A:1}", b.String())
	require.Equal(t, "{A:2}", c.String())
	require.Equal(t, "{A:1,B:5}", d.String())

	m := d.Map()
	m["A"] = 42
	require.Equal(t, Time(1), d.Get("A"), "Map returns a copy")

	var zero Vector
	require.Equal(t, "{}", zero.String())
	require.Equal(t, "{Z:1}", zero.Increment("Z").String())
	require.Equal(t, "{}", zero.String())
}

func TestLamportVectorStringAndJSON(t *testing.T) {
	v := NewVector(map[NodeID]Time{"C": 3, "A": 2, "B": 1})
	require.Equal(t, "{A:2,B:1,C:3}", v.String())
	require.Equal(t, []NodeID{"A", "B", "C"}, v.Nodes())
	b, err := json.Marshal(v)
	require.NoError(t, err)
	require.JSONEq(t, `{"A":2,"B":1,"C":3}`, string(b))
	var back Vector
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, Equal, back.Compare(v))
	b, err = json.Marshal(Vector{})
	require.NoError(t, err)
	require.Equal(t, "{}", string(b))
	require.Equal(t, "concurrent", Concurrent.String())
}
