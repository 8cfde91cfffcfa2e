package session

import (
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestDeletedAfter(t *testing.T) {
	t.Parallel()
	del := func(rev int64) *clientv3.Event {
		return &clientv3.Event{Type: mvccpb.DELETE, Kv: &mvccpb.KeyValue{ModRevision: rev}}
	}
	put := &clientv3.Event{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{CreateRevision: 5, ModRevision: 9}}
	cases := []struct {
		name string
		evs  []*clientv3.Event
		want bool
	}{
		{"nothing", nil, false},
		{"an update of our key", []*clientv3.Event{put}, false},
		{"deleted after our create revision", []*clientv3.Event{del(9)}, true},
		{"a delete of an earlier incarnation", []*clientv3.Event{del(5), del(3)}, false},
		{"update then delete", []*clientv3.Event{put, del(10)}, true},
		{"delete without kv", []*clientv3.Event{{Type: mvccpb.DELETE}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := deletedAfter(tc.evs, 5); got != tc.want {
				t.Fatalf("deletedAfter = %v, want %v", got, tc.want)
			}
		})
	}
}
