package cluster

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/hashicorp/raft"
)

// OpKind is what a client operation does.
type OpKind string

const (
	OpPut    OpKind = "put"
	OpGet    OpKind = "get"
	OpCAS    OpKind = "cas"
	OpDelete OpKind = "delete"
)

var opCodes = map[OpKind]byte{OpPut: 1, OpGet: 2, OpCAS: 3, OpDelete: 4}
var opKinds = map[byte]OpKind{1: OpPut, 2: OpGet, 3: OpCAS, 4: OpDelete}

// command is one entry of the replicated log.
type command struct {
	Kind  OpKind
	Key   string
	Value string // put's value, cas's old value
	New   string // cas's new value
}

func (c command) encode() []byte {
	b := make([]byte, 0, 1+3*binary.MaxVarintLen32+len(c.Key)+len(c.Value)+len(c.New))
	b = append(b, opCodes[c.Kind])
	for _, s := range []string{c.Key, c.Value, c.New} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

var errBadCommand = errors.New("cluster: malformed command")

func decodeCommand(b []byte) (command, error) {
	if len(b) == 0 {
		return command{}, errBadCommand
	}
	kind, ok := opKinds[b[0]]
	if !ok {
		return command{}, errBadCommand
	}
	c := command{Kind: kind}
	b = b[1:]
	var fields [3]string
	for i := range fields {
		n, w := binary.Uvarint(b)
		if w <= 0 || uint64(len(b)-w) < n {
			return command{}, errBadCommand
		}
		fields[i] = string(b[w : w+int(n)])
		b = b[w+int(n):]
	}
	c.Key, c.Value, c.New = fields[0], fields[1], fields[2]
	return c, nil
}

// EncodePut returns the log entry of a put, for driving a bare raft.Raft
// with the lab's state machine (the benchmark does).
func EncodePut(key, value string) []byte {
	return command{Kind: OpPut, Key: key, Value: value}.encode()
}

// applyResult is what the state machine returns for one entry.
type applyResult struct {
	Value   string
	Found   bool
	Swapped bool
	Err     error
}

// kvFSM is the key-value state machine: put, get, delete, compare-and-set.
// While its node is paused, Apply blocks: a paused process applies nothing.
type kvFSM struct {
	gate *gate
	stop <-chan struct{}

	mu      sync.RWMutex
	data    map[string]string
	applied uint64
	cond    *sync.Cond
}

// NewFSM returns the lab's key-value state machine, unpaused.
func NewFSM() raft.FSM { return newKVFSM(&gate{}, nil) }

func newKVFSM(g *gate, stop <-chan struct{}) *kvFSM {
	f := &kvFSM{gate: g, stop: stop, data: map[string]string{}}
	f.cond = sync.NewCond(f.mu.RLocker())
	return f
}

func (f *kvFSM) Apply(l *raft.Log) any {
	f.gate.wait(f.stop)
	c, err := decodeCommand(l.Data)
	f.mu.Lock()
	defer func() {
		if l.Index > f.applied {
			f.applied = l.Index
		}
		f.mu.Unlock()
		f.cond.Broadcast()
	}()
	if err != nil {
		return applyResult{Err: err}
	}
	switch c.Kind {
	case OpPut:
		f.data[c.Key] = c.Value
		return applyResult{}
	case OpDelete:
		_, found := f.data[c.Key]
		delete(f.data, c.Key)
		return applyResult{Found: found}
	case OpCAS:
		cur, found := f.data[c.Key]
		if found && cur == c.Value {
			f.data[c.Key] = c.New
			return applyResult{Value: cur, Found: true, Swapped: true}
		}
		return applyResult{Value: cur, Found: found}
	case OpGet:
		v, found := f.data[c.Key]
		return applyResult{Value: v, Found: found}
	}
	return applyResult{Err: errBadCommand}
}

// read returns the local value of key and the index applied so far.
func (f *kvFSM) read(key string) (string, bool, uint64) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	v, ok := f.data[key]
	return v, ok, f.applied
}

func (f *kvFSM) appliedIndex() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.applied
}

// waitApplied blocks until index is applied or done is closed.
func (f *kvFSM) waitApplied(index uint64, done <-chan struct{}) bool {
	stopWake := make(chan struct{})
	defer close(stopWake)
	go func() {
		select {
		case <-done:
			f.cond.Broadcast()
		case <-stopWake:
		}
	}()
	f.mu.RLock()
	defer f.mu.RUnlock()
	for f.applied < index {
		select {
		case <-done:
			return false
		default:
		}
		f.cond.Wait()
	}
	return true
}

type kvSnapshot struct {
	data map[string]string
}

func (f *kvFSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	cp := make(map[string]string, len(f.data))
	for k, v := range f.data {
		cp[k] = v
	}
	return kvSnapshot{data: cp}, nil
}

func (f *kvFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var data map[string]string
	if err := json.NewDecoder(rc).Decode(&data); err != nil {
		return fmt.Errorf("cluster: restore snapshot: %w", err)
	}
	if data == nil {
		data = map[string]string{}
	}
	f.mu.Lock()
	f.data = data
	f.mu.Unlock()
	f.cond.Broadcast()
	return nil
}

func (s kvSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := json.NewEncoder(sink).Encode(s.data); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (kvSnapshot) Release() {}
