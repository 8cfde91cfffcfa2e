package etcdtest

import (
	"context"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// KVWrites records the KV writes (Txn, Put, DeleteRange, Compact) a client
// sends, with etcd's answers, for a test that checks what goes on the wire.
// Reads are not recorded: a held key's loss watch, or the test itself, can
// read at any time. Pass DialOption to Dial.
type KVWrites struct {
	mu          sync.Mutex
	calls       []KVCall
	failDeletes int
}

// KVCall is one request: its method ("Txn", "DeleteRange", ...) and etcd's
// answer (*etcdserverpb.TxnResponse, ...).
type KVCall struct {
	Method string
	Reply  any
}

// DialOption installs the recorder on a client.
func (w *KVWrites) DialOption() grpc.DialOption {
	return grpc.WithChainUnaryInterceptor(w.intercept)
}

func (w *KVWrites) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	name, ok := strings.CutPrefix(method, "/etcdserverpb.KV/")
	if !ok || name == "Range" {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, KVCall{Method: name, Reply: reply})
	if err == nil && name == "DeleteRange" && w.failDeletes > 0 {
		w.failDeletes--
		// Unavailable, as a connection that broke: clientv3 does not retry
		// a write on it (it does retry one on a DeadlineExceeded whose
		// context is not done).
		return status.Error(codes.Unavailable, "transport is closing")
	}
	return err
}

// FailNextDelete makes the next DeleteRange fail after etcd applied it: its
// answer is lost on the way.
func (w *KVWrites) FailNextDelete() {
	w.mu.Lock()
	w.failDeletes++
	w.mu.Unlock()
}

// Take returns the writes sent since the last Take.
func (w *KVWrites) Take() []KVCall {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.calls
	w.calls = nil
	return c
}

// Methods returns calls' methods, in order.
func Methods(calls []KVCall) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Method)
	}
	return out
}
