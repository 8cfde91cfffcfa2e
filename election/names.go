package election

import (
	"context"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/internal/primitive"
)

// queueRead reads every key under the election's prefix, oldest first:
// the candidates are those of them in the election's layout (candidatesOf),
// so the first key in create order need not be the leader.
var (
	queueRead     = []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend)}
	queueKeysRead = []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend), clientv3.WithKeysOnly()}
)

// candidatesOf keeps, of kvs (keys under pfx, the prefix of the election
// name), the candidates: keys NAME/<lease hex>, as concurrency.Election and
// etcdctl elect write them (and a Mutex of the same name: their layouts are
// one). Keys of another name below this one (a lock named NAME/child) are
// skipped. A key of a semaphore's or a read-write lock's layout means the
// name is theirs: an error wrapping session.ErrNameInUse naming the key. Pure.
func candidatesOf(name, pfx string, kvs []*mvccpb.KeyValue) ([]*mvccpb.KeyValue, error) {
	var own []*mvccpb.KeyValue
	for _, kv := range kvs {
		switch role := primitive.RoleOf(pfx, string(kv.Key)); {
		case role == primitive.RoleExclusive:
			own = append(own, kv)
		case role.IsSemaphore():
			return nil, primitive.NameInUse(primitive.KindElection, name, string(kv.Key), primitive.KindSemaphore)
		case role.IsLock():
			return nil, primitive.NameInUse(primitive.KindElection, name, string(kv.Key), primitive.KindLock)
		}
	}
	return own, nil
}

// isCandidate reports whether key, under pfx, is in the election's layout.
func isCandidate(pfx, key string) bool { return primitive.RoleOf(pfx, key) == primitive.RoleExclusive }

// leaderKV reads the leader's key (nil: none) and the revision of the
// read. The first key in create order is read alone, as etcd's
// concurrency.Election does; only when it is not a candidate (another
// name's key, or a semaphore's or lock's) is the whole queue read.
func (e *Election) leaderKV(ctx context.Context) (*mvccpb.KeyValue, int64, error) {
	resp, err := e.client.Get(ctx, e.keyPrefix, clientv3.WithFirstCreate()...)
	if err != nil {
		return nil, 0, err
	}
	if len(resp.Kvs) == 0 || isCandidate(e.keyPrefix, string(resp.Kvs[0].Key)) {
		return first(resp.Kvs), resp.Header.Revision, nil
	}
	if resp, err = e.client.Get(ctx, e.keyPrefix, queueRead...); err != nil {
		return nil, 0, err
	}
	kv, err := e.firstCandidate(resp.Kvs)
	return kv, resp.Header.Revision, err
}

func first(kvs []*mvccpb.KeyValue) *mvccpb.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	return kvs[0]
}

// firstCandidate is the first candidate of a queueRead's keys: the leader
// (nil: none).
func (e *Election) firstCandidate(kvs []*mvccpb.KeyValue) (*mvccpb.KeyValue, error) {
	own, err := candidatesOf(e.name, e.keyPrefix, kvs)
	if err != nil || len(own) == 0 {
		return nil, err
	}
	return own[0], nil
}
