package bench

import (
	"bytes"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWriteTableLayout(t *testing.T) {
	tab := Table{
		Title:   "lock benchmark: embedded etcd",
		Columns: []string{"coordkit", "etcd_concurrency"},
		Ratios:  []Ratio{{Of: "coordkit", To: "etcd_concurrency"}},
	}
	tab.Add("handoff_p50_ms", "ms", 1.29, 29.1)
	tab.Add("contended_2_per_s", "per_s", 816.333, 20.33)
	tab.Add("crash_failover_ttl2_ms", "ms", 2224.3, 0)
	var b bytes.Buffer
	require.NoError(t, WriteTable(&b, tab))
	require.Equal(t, `lock benchmark: embedded etcd
metric                  coordkit  etcd_concurrency  unit   coordkit better by
handoff_p50_ms              1.29             29.10  ms                 22.56x
contended_2_per_s          816.3             20.33  per_s              40.15x
crash_failover_ttl2_ms      2224              0.00  ms                      -
`, b.String())
}

func TestWriteTableManyColumns(t *testing.T) {
	tab := Table{
		Columns: []string{"measured", "model", "redsync"},
		Ratios:  []Ratio{{Of: "measured", To: "model", Plain: true}, {Of: "measured", To: "redsync"}},
	}
	tab.Add("a_ms", "ms", 6, 5)             // redsync missing
	tab.Add("b_ms", "ms", 4, 8, math.NaN()) // not measured
	tab.Add("c_per_s", "writes/s", 30, 60, 10)
	var b bytes.Buffer
	require.NoError(t, WriteTable(&b, tab))
	require.Equal(t, `metric   measured  model  redsync  unit      measured/model  measured better than redsync by
a_ms         6.00   5.00        -  ms                 1.20x                                -
b_ms         4.00   8.00        -  ms                 0.50x                                -
c_per_s     30.00  60.00    10.00  writes/s           0.50x                            3.00x
`, b.String())
	v, ok := tab.Value("c_per_s", "model")
	require.True(t, ok)
	require.Equal(t, 60.0, v)
	_, ok = tab.Value("a_ms", "redsync")
	require.False(t, ok)
	_, ok = tab.Value("nope", "model")
	require.False(t, ok)
}

func TestWriteTableShapeErrors(t *testing.T) {
	for name, tab := range map[string]Table{
		"too many values": {Columns: []string{"a"}, Rows: []Row{{Metric: "m", Values: []float64{1, 2}}}},
		"unknown ratio":   {Columns: []string{"a", "b"}, Ratios: []Ratio{{Of: "a", To: "c"}}},
	} {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			require.ErrorIs(t, WriteTable(&b, tab), ErrShape)
			require.Zero(t, b.Len())
		})
	}
}

func TestHigherIsBetter(t *testing.T) {
	require.True(t, HigherIsBetter("per_s"))
	require.True(t, HigherIsBetter("writes/s"))
	require.False(t, HigherIsBetter("ms"))
	require.False(t, HigherIsBetter(""))
}
