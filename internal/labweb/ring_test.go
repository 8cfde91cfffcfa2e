package labweb

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func seqs(evs []Event) []uint64 {
	var out []uint64
	for _, e := range evs {
		out = append(out, e.Seq)
	}
	return out
}

func TestRingSince(t *testing.T) {
	tests := []struct {
		name     string
		size     int
		add      int
		since    uint64
		want     []uint64
		complete bool
	}{
		{"empty", 4, 0, 0, nil, true},
		{"all from the start", 4, 3, 0, []uint64{1, 2, 3}, true},
		{"after some", 4, 3, 1, []uint64{2, 3}, true},
		{"at head", 4, 3, 3, nil, true},
		{"past head", 4, 3, 9, nil, true},
		{"wrapped, still held", 4, 10, 6, []uint64{7, 8, 9, 10}, true},
		{"wrapped, some lost", 4, 10, 2, []uint64{7, 8, 9, 10}, false},
		{"wrapped, from zero", 4, 10, 0, []uint64{7, 8, 9, 10}, false},
		{"size one", 1, 5, 4, []uint64{5}, true},
		{"size one, lost", 1, 5, 3, []uint64{5}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRing(tt.size)
			for i := 1; i <= tt.add; i++ {
				e := r.Add("x", []byte(strconv.Itoa(i)))
				require.Equal(t, uint64(i), e.Seq)
			}
			got, complete := r.Since(tt.since)
			require.Equal(t, tt.want, seqs(got))
			require.Equal(t, tt.complete, complete)
			for _, e := range got {
				require.Equal(t, strconv.FormatUint(e.Seq, 10), string(e.Data))
			}
		})
	}
}

// Whatever the size and however far behind a reader is, what it gets is
// in order, without gaps, ends at Head, and is complete exactly when
// nothing it missed was overwritten.
func TestRingProperty(t *testing.T) {
	for size := 1; size <= 6; size++ {
		r := NewRing(size)
		for head := 0; head <= 20; head++ {
			for since := 0; since <= head+1; since++ {
				got, complete := r.Since(uint64(since))
				s := seqs(got)
				if since >= head {
					require.Empty(t, s)
					require.True(t, complete)
					continue
				}
				require.Equal(t, uint64(head), s[len(s)-1])
				for i := 1; i < len(s); i++ {
					require.Equal(t, s[i-1]+1, s[i])
				}
				require.Equal(t, s[0] == uint64(since)+1, complete)
				require.LessOrEqual(t, len(s), size)
			}
			r.Add("x", nil)
		}
	}
}
