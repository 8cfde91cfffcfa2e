package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPercentile(t *testing.T) {
	ms := func(n ...int) []time.Duration {
		var d []time.Duration
		for _, x := range n {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	hundred := make([]int, 0, 100)
	for i := 100; i >= 1; i-- {
		hundred = append(hundred, i)
	}
	cases := []struct {
		name    string
		samples []time.Duration
		p       float64
		want    time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one", ms(7), 0.99, 7 * time.Millisecond},
		{"median of odd", ms(9, 1, 5), 0.5, 5 * time.Millisecond},
		{"median of even is the lower", ms(4, 1, 3, 2), 0.5, 2 * time.Millisecond},
		{"p99 of few is the largest", ms(5, 1, 4, 2, 3), 0.99, 5 * time.Millisecond},
		{"p0 is the smallest", ms(5, 1, 4), 0, time.Millisecond},
		{"p1 of five is the smallest", ms(5, 1, 4, 2, 3), 0.01, time.Millisecond},
		{"p99 of 100 is the 99th", ms(hundred...), 0.99, 99 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]time.Duration(nil), tc.samples...)
			require.Equal(t, tc.want, Percentile(tc.samples, tc.p))
			require.Equal(t, in, tc.samples, "the samples are not reordered")
		})
	}
}

func TestMs(t *testing.T) {
	require.Equal(t, 1.5, Ms(1500*time.Microsecond))
	require.Equal(t, 0.001, Ms(1999*time.Nanosecond))
	require.Equal(t, 30.0, Ms(30*time.Millisecond))
}
