package lock

import (
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

func TestLockJudgeWait(t *testing.T) {
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

func TestLockOwnKeyGone(t *testing.T) {
	cases := []struct {
		name string
		ev   *mvccpb.Event
		want bool
	}{
		{"delete", &mvccpb.Event{Type: mvccpb.DELETE, Kv: &mvccpb.KeyValue{ModRevision: 9}}, true},
		{"update of our key", &mvccpb.Event{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{CreateRevision: 5, ModRevision: 9}}, false},
		{"recreated", &mvccpb.Event{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{CreateRevision: 8, ModRevision: 8}}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ownKeyGone(tc.ev, 5); got != tc.want {
				t.Fatalf("ownKeyGone = %v, want %v", got, tc.want)
			}
		})
	}
	if predecessorGone([]*mvccpb.Event{{Type: mvccpb.PUT}}) || !predecessorGone([]*mvccpb.Event{{Type: mvccpb.PUT}, {Type: mvccpb.DELETE}}) {
		t.Fatal("predecessorGone")
	}
}

func TestLockKeyWatchRoutesDeletes(t *testing.T) {
	del := func(rev int64) *mvccpb.Event {
		return &mvccpb.Event{Type: mvccpb.DELETE, Kv: &mvccpb.KeyValue{Key: []byte("n/1"), ModRevision: rev}}
	}
	isGone := func(s *keySub) bool {
		select {
		case <-s.gone:
			return true
		default:
			return false
		}
	}
	t.Run("delete reported before attach", func(t *testing.T) {
		kw := &keyWatch{}
		kw.deliver(del(10))
		sub := newKeySub(8, 9)
		kw.attach(sub)
		if !isGone(sub) {
			t.Fatal("a delete after our create revision, seen before attach, must count")
		}
	})
	t.Run("older deletes are not ours", func(t *testing.T) {
		kw := &keyWatch{}
		kw.deliver(del(10))
		sub := newKeySub(12, 12)
		calls := 0
		sub.setOnGone(func() { calls++ })
		kw.attach(sub)
		kw.deliver(del(11))
		if isGone(sub) {
			t.Fatal("delete of an earlier incarnation of the key")
		}
		kw.deliver(del(13))
		kw.deliver(del(14))
		if !isGone(sub) || calls != 1 {
			t.Fatalf("gone=%v calls=%d, want gone once", isGone(sub), calls)
		}
	})
	t.Run("detached subscriber hears nothing", func(t *testing.T) {
		kw := &keyWatch{}
		sub := newKeySub(5, 5)
		kw.attach(sub)
		kw.detach(sub)
		kw.deliver(del(6))
		if isGone(sub) {
			t.Fatal("detached")
		}
	})
}
