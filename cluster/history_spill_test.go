package cluster

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// With a memory limit, the oldest chunks spill to a file; records reads
// everything back, in order; reset and removeSpill delete the file.
func TestHistorySpill(t *testing.T) {
	tests := []struct {
		name         string
		limit, add   int
		wantInMemory int
	}{
		{"no limit", 0, 3*historyChunk + 5, 3*historyChunk + 5},
		{"under the limit", 4 * historyChunk, 3*historyChunk + 5, 3*historyChunk + 5},
		{"less than a chunk", 1, 3*historyChunk + 5, 5},
		{"two chunks", 2 * historyChunk, 5*historyChunk + 1, 2*historyChunk + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &history{inMemory: tt.limit}
			for i := 0; i < tt.add; i++ {
				h.add(Record{Client: i, Key: "k", Op: OpPut})
			}
			c := &Cluster{hist: h}
			st := c.HistoryStats()
			require.Empty(t, st.SpillError)
			require.Equal(t, tt.wantInMemory, st.InMemory)
			require.Equal(t, tt.add-tt.wantInMemory, st.Spilled)
			recs := h.records()
			require.Len(t, recs, tt.add)
			for i, r := range recs {
				require.Equal(t, i, r.Client)
			}
			file := st.SpillFile
			if st.Spilled > 0 {
				require.FileExists(t, file)
			}
			h.reset()
			require.Empty(t, h.records())
			if file != "" {
				_, err := os.Stat(file)
				require.True(t, os.IsNotExist(err), "spill file left behind")
			}
		})
	}
}

// Index samples beyond the bound are thinned, oldest first; other events
// stay.
func TestTimelineThinsIndexSamples(t *testing.T) {
	var now int64
	tl := &timeline{now: func() int64 { now++; return now }, maxIndex: 10}
	tl.add(Event{Kind: EventLeader, Leader: 1})
	for i := 0; i < 100; i++ {
		tl.add(Event{Kind: EventIndex, Commit: uint64(i)})
		if i == 50 {
			tl.add(Event{Kind: EventFault, Detail: "cut 1→2"})
		}
	}
	ev := tl.events()
	var idx []uint64
	kinds := map[EventKind]int{}
	for i, e := range ev {
		kinds[e.Kind]++
		if i > 0 {
			require.Less(t, ev[i-1].AtNs, e.AtNs)
		}
		if e.Kind == EventIndex {
			idx = append(idx, e.Commit)
		}
	}
	require.Equal(t, 1, kinds[EventLeader])
	require.Equal(t, 1, kinds[EventFault])
	require.LessOrEqual(t, len(idx), 10)
	require.Equal(t, uint64(99), idx[len(idx)-1])
	for i := 1; i < len(idx); i++ {
		require.Equal(t, idx[i-1]+1, idx[i], "the newest samples, in order")
	}
	require.Equal(t, 100, len(idx)+tl.dropped)
}
