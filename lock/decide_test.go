package lock

import (
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

func TestLockJudgeWait(t *testing.T) {
	t.Parallel()
	kv := func(key string, rev int64) *mvccpb.KeyValue {
		return &mvccpb.KeyValue{Key: []byte(key), CreateRevision: rev}
	}
	cases := []struct {
		name  string
		own   []*mvccpb.KeyValue
		preds []*mvccpb.KeyValue
		want  waitVerdict
		pred  string
	}{
		{"own key missing", nil, nil, verdictGone, ""},
		{"own key recreated", []*mvccpb.KeyValue{kv("n/1", 9)}, nil, verdictGone, ""},
		{"nothing before us", []*mvccpb.KeyValue{kv("n/1", 5)}, nil, verdictHeld, ""},
		{"a predecessor", []*mvccpb.KeyValue{kv("n/1", 5)}, []*mvccpb.KeyValue{kv("n/2", 4)}, verdictWait, "n/2"},
		{"gone wins over predecessor", nil, []*mvccpb.KeyValue{kv("n/2", 4)}, verdictGone, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, pred := judgeWait(tc.own, 5, tc.preds)
			if v != tc.want {
				t.Fatalf("verdict %d, want %d", v, tc.want)
			}
			if got := ""; pred != nil {
				got = string(pred.Key)
				if got != tc.pred {
					t.Fatalf("pred %q, want %q", got, tc.pred)
				}
			} else if tc.pred != "" {
				t.Fatalf("no pred, want %q", tc.pred)
			}
		})
	}
}

func TestLockPredecessorGone(t *testing.T) {
	t.Parallel()
	if predecessorGone([]*mvccpb.Event{{Type: mvccpb.PUT}}) || !predecessorGone([]*mvccpb.Event{{Type: mvccpb.PUT}, {Type: mvccpb.DELETE}}) {
		t.Fatal("predecessorGone")
	}
}

func TestLockBlockingRanges(t *testing.T) {
	t.Parallel()
	in := func(rs []keyRange, key string) bool {
		for _, r := range rs {
			if key >= r.start && key < r.end {
				return true
			}
		}
		return false
	}
	cases := []struct {
		key                string
		byReader, byWriter bool
	}{
		{"n/read/694d7a4f2b9e1c05", false, true},
		{"n/write/694d7a4f2b9e1c05", true, true},
		{"n/694d7a4f2b9e1c05", true, true},          // Mutex, concurrency.Mutex
		{"n/write/1732000000000000000", true, true}, // recipes.RWMutex
		{"n/read/1732000000000000000", false, true},
		{"n/readme", true, true}, // not a reader key: treated as exclusive
		{"n2/x", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.key, func(t *testing.T) {
			if got := in(blockingRanges("n/", kindRead), tc.key); got != tc.byReader {
				t.Fatalf("blocks a reader: %v, want %v", got, tc.byReader)
			}
			if got := in(blockingRanges("n/", kindWrite), tc.key); got != tc.byWriter {
				t.Fatalf("blocks a writer: %v, want %v", got, tc.byWriter)
			}
		})
	}
}

func TestLockBlockersAndPredecessor(t *testing.T) {
	t.Parallel()
	kv := func(key string, rev int64) *mvccpb.KeyValue {
		return &mvccpb.KeyValue{Key: []byte(key), CreateRevision: rev}
	}
	if b := oldestBlocker([][]*mvccpb.KeyValue{{kv("a", 7)}, {kv("b", 4)}}, 9); b == nil || string(b.Key) != "b" {
		t.Fatalf("oldest blocker %v, want b", b)
	}
	if b := oldestBlocker([][]*mvccpb.KeyValue{{kv("me", 9)}, nil}, 9); b != nil {
		t.Fatalf("our own key blocks us: %v", b)
	}
	got := lastCreated([][]*mvccpb.KeyValue{{kv("a", 7), kv("c", 2)}, {kv("b", 5)}})
	if string(got[0].Key) != "a" || string(got[1].Key) != "b" || string(got[2].Key) != "c" {
		t.Fatalf("lastCreated order wrong: %v", got)
	}
	if a := aheadOf([][]*mvccpb.KeyValue{{kv("a", 3), kv("me", 9)}}, 9); len(a) != 1 || a["a"] == nil {
		t.Fatalf("aheadOf = %v", a)
	}
}

func TestLockDelayLeft(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	cases := []struct {
		name   string
		lossAt time.Time
		d      time.Duration
		now    time.Time
		want   time.Duration
	}{
		{"no loss", time.Time{}, time.Second, t0, 0},
		{"no delay", t0, 0, t0, 0},
		{"just lost", t0, time.Second, t0.Add(300 * time.Millisecond), 700 * time.Millisecond},
		{"delay over", t0, time.Second, t0.Add(2 * time.Second), 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := delayLeft(tc.lossAt, tc.d, tc.now); got != tc.want {
				t.Fatalf("delayLeft = %s, want %s", got, tc.want)
			}
		})
	}
}
