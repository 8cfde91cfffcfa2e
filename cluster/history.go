package cluster

import (
	"encoding/gob"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// Outcome is what the client knows about an operation when it returns.
//
// internal/safety has an Outcome with the same first three values; they stay
// separate because cluster is public and cannot import an internal package,
// and safety's has a fourth value (stale: refused by a fenced resource) that
// the lab's key-value store never produces.
type Outcome string

const (
	// OutcomeOK: the operation took effect (a read returned a value).
	OutcomeOK Outcome = "ok"
	// OutcomeFail: the operation certainly did not take effect.
	OutcomeFail Outcome = "fail"
	// OutcomeUnknown: the client gave up waiting; the operation may or may
	// not have taken effect, now or later.
	OutcomeUnknown Outcome = "unknown"
)

// Record is one client operation in the history, in the JSON shape the lab
// exports. Value is what a put wrote or what a get read. ReturnNs of an
// unknown operation is when the client gave up; the checker treats it as
// never returned.
type Record struct {
	Client   int      `json:"client"`
	Op       OpKind   `json:"op"`
	Key      string   `json:"key"`
	Value    string   `json:"value"`
	Found    bool     `json:"found"`
	Old      string   `json:"old"`
	New      string   `json:"new"`
	Swapped  bool     `json:"swapped"`
	Mode     ReadMode `json:"mode"`
	Node     NodeID   `json:"node"`
	CallNs   int64    `json:"call_ns"`
	ReturnNs int64    `json:"return_ns"`
	Outcome  Outcome  `json:"outcome"`
	Error    string   `json:"error,omitempty"`
}

// history stores records in fixed chunks, so that recording a long
// benchmark never copies what is already stored. With a memory limit,
// full chunks beyond it spill, in order, to a temporary file (gob), and
// records reads them back: memory stays bounded however long the run,
// and nothing is lost.
type history struct {
	mu     sync.Mutex
	chunks [][]Record
	// inMemory is the limit in records (0: none); spill is the file the
	// oldest full chunks went to, spilled how many, enc its encoder.
	inMemory int
	spill    *os.File
	enc      *gob.Encoder
	spilled  int
	spillErr error
}

const historyChunk = 4096

func (h *history) add(r Record) {
	h.mu.Lock()
	n := len(h.chunks)
	if n == 0 || len(h.chunks[n-1]) == historyChunk {
		h.chunks = append(h.chunks, make([]Record, 0, historyChunk))
		n++
		if h.inMemory > 0 && (n-1)*historyChunk > h.inMemory {
			h.spillOldest()
			n = len(h.chunks)
		}
	}
	h.chunks[n-1] = append(h.chunks[n-1], r)
	h.mu.Unlock()
}

// spillOldest writes the oldest chunk to the spill file and drops it from
// memory. On an error the chunk stays in memory (and the error is kept
// for HistoryStats): nothing is lost, only the bound.
func (h *history) spillOldest() {
	if h.spillErr != nil {
		return
	}
	if h.spill == nil {
		f, err := os.CreateTemp("", "coordkit-lab-history-*.gob")
		if err != nil {
			h.spillErr = err
			return
		}
		h.spill, h.enc = f, gob.NewEncoder(f)
	}
	if err := h.enc.Encode(h.chunks[0]); err != nil {
		h.spillErr = err
		return
	}
	h.spilled++
	h.chunks[0] = nil
	h.chunks = h.chunks[1:]
}

func (h *history) records() []Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Record
	if h.spilled > 0 {
		f, err := os.Open(h.spill.Name())
		if err == nil {
			dec := gob.NewDecoder(f)
			for i := 0; i < h.spilled; i++ {
				var chunk []Record
				if err := dec.Decode(&chunk); err != nil {
					h.spillErr = err
					break
				}
				out = append(out, chunk...)
			}
			f.Close()
		} else {
			h.spillErr = err
		}
	}
	for _, c := range h.chunks {
		out = append(out, c...)
	}
	return out
}

func (h *history) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.chunks = nil
	h.removeSpill()
}

func (h *history) removeSpill() {
	if h.spill != nil {
		h.spill.Close()
		_ = os.Remove(h.spill.Name())
	}
	h.spill, h.enc, h.spilled, h.spillErr = nil, nil, 0, nil
}

// HistoryStats says where the history is kept.
type HistoryStats struct {
	// InMemory and Spilled count records in memory and in the spill file.
	InMemory int `json:"in_memory"`
	Spilled  int `json:"spilled"`
	// SpillFile is the spill file's path ("" before the first spill).
	SpillFile string `json:"spill_file,omitempty"`
	// SpillError is why spilling stopped, if it did (the history then
	// grows in memory).
	SpillError string `json:"spill_error,omitempty"`
}

// HistoryStats reports how much of the history is in memory and how much
// has spilled to disk (see Config.HistoryInMemory).
func (c *Cluster) HistoryStats() HistoryStats {
	h := c.hist
	h.mu.Lock()
	defer h.mu.Unlock()
	st := HistoryStats{Spilled: h.spilled * historyChunk}
	for _, ch := range h.chunks {
		st.InMemory += len(ch)
	}
	if h.spill != nil {
		st.SpillFile = h.spill.Name()
	}
	if h.spillErr != nil {
		st.SpillError = h.spillErr.Error()
	}
	return st
}

// History returns every client operation recorded so far (reading back
// what spilled to disk).
func (c *Cluster) History() []Record { return c.hist.records() }

// ResetHistory forgets the operations recorded so far (a benchmark's, say)
// so that a later Check looks only at what follows.
func (c *Cluster) ResetHistory() { c.hist.reset() }

// CheckResult is porcupine's verdict on a history.
type CheckResult struct {
	// Linearizable is true only if porcupine proved it (not on a timeout).
	Linearizable bool `json:"linearizable"`
	// Verdict is porcupine's: Ok, Illegal or Unknown (timed out).
	Verdict string `json:"verdict"`
	// Ops is the number of operations checked (failed operations and reads
	// without an answer are left out: they had no effect).
	Ops int `json:"ops"`
	// Keys is the number of independent keys checked.
	Keys int `json:"keys"`
	// IllegalKeys are the keys whose operations no order explains (empty
	// when Linearizable or when the checker timed out).
	IllegalKeys []string `json:"illegal_keys,omitempty"`

	info porcupine.LinearizationInfo
}

// kvInput and kvOutput are porcupine's view of a record.
type kvInput struct {
	Op      OpKind
	Key     string
	Value   string // put: value; cas: old
	New     string
	Mode    ReadMode
	Unknown bool
}

type kvOutput struct {
	Value   string
	Found   bool
	Swapped bool
	Unknown bool
}

type kvState struct {
	Value string
	Found bool
}

// KVModel is the porcupine model of the lab's key-value store, partitioned
// by key. An operation with an unknown outcome may take effect at any
// point after its call, or never; its output is not checked.
func KVModel() porcupine.Model {
	return porcupine.Model{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			by := map[string][]porcupine.Operation{}
			var keys []string
			for _, op := range h {
				k := op.Input.(kvInput).Key
				if _, ok := by[k]; !ok {
					keys = append(keys, k)
				}
				by[k] = append(by[k], op)
			}
			sort.Strings(keys)
			out := make([][]porcupine.Operation, 0, len(keys))
			for _, k := range keys {
				out = append(out, by[k])
			}
			return out
		},
		Init: func() any { return kvState{} },
		Step: func(state, input, output any) (bool, any) {
			s, in, out := state.(kvState), input.(kvInput), output.(kvOutput)
			switch in.Op {
			case OpPut:
				return true, kvState{Value: in.Value, Found: true}
			case OpDelete:
				return true, kvState{}
			case OpGet:
				if out.Unknown {
					return true, s
				}
				return out.Found == s.Found && (!s.Found || out.Value == s.Value), s
			case OpCAS:
				match := s.Found && s.Value == in.Value
				if out.Unknown {
					if match {
						return true, kvState{Value: in.New, Found: true}
					}
					return true, s
				}
				if out.Swapped != match {
					return false, s
				}
				if match {
					return true, kvState{Value: in.New, Found: true}
				}
				return true, s
			}
			return false, s
		},
		Equal: func(a, b any) bool { return a.(kvState) == b.(kvState) },
		DescribeOperation: func(input, output any) string {
			in, out := input.(kvInput), output.(kvOutput)
			var s string
			switch in.Op {
			case OpPut:
				s = fmt.Sprintf("put(%s, %q)", in.Key, in.Value)
			case OpDelete:
				s = fmt.Sprintf("delete(%s)", in.Key)
			case OpGet:
				if out.Found {
					s = fmt.Sprintf("get(%s) [%s] → %q", in.Key, in.Mode, out.Value)
				} else {
					s = fmt.Sprintf("get(%s) [%s] → not found", in.Key, in.Mode)
				}
			case OpCAS:
				s = fmt.Sprintf("cas(%s, %q→%q) → %v", in.Key, in.Value, in.New, out.Swapped)
			}
			if out.Unknown {
				s += " (unknown)"
			}
			return s
		},
		DescribeState: func(state any) string {
			s := state.(kvState)
			if !s.Found {
				return "∅"
			}
			return fmt.Sprintf("%q", s.Value)
		},
	}
}

// Operations turns records into porcupine operations: failed operations and
// reads without an answer are left out; unknown writes never return.
func Operations(recs []Record) []porcupine.Operation {
	ops := make([]porcupine.Operation, 0, len(recs))
	for _, r := range recs {
		if r.Outcome == OutcomeFail || (r.Op == OpGet && r.Outcome != OutcomeOK) {
			continue
		}
		in := kvInput{Op: r.Op, Key: r.Key, Value: r.Value, New: r.New, Mode: r.Mode}
		if r.Op == OpCAS {
			in.Value = r.Old
		}
		out := kvOutput{Value: r.Value, Found: r.Found, Swapped: r.Swapped}
		ret := r.ReturnNs
		if r.Outcome == OutcomeUnknown {
			out.Unknown = true
			in.Unknown = true
			ret = math.MaxInt64
		}
		ops = append(ops, porcupine.Operation{ClientId: r.Client, Input: in, Call: r.CallNs, Output: out, Return: ret})
	}
	return ops
}

// CheckHistory checks recs for linearizability with porcupine, giving up
// after timeout (then Verdict is Unknown and Linearizable false).
func CheckHistory(recs []Record, timeout time.Duration) CheckResult {
	ops := Operations(recs)
	keys := map[string]bool{}
	for _, op := range ops {
		keys[op.Input.(kvInput).Key] = true
	}
	res, info := porcupine.CheckOperationsVerbose(KVModel(), ops, timeout)
	out := CheckResult{Linearizable: res == porcupine.Ok, Verdict: string(res), Ops: len(ops), Keys: len(keys), info: info}
	if res == porcupine.Illegal {
		// Partitions come in the order of KVModel's Partition: by key.
		parts := KVModel().Partition(ops)
		partials := info.PartialLinearizations()
		for i, p := range parts {
			if i >= len(partials) {
				break
			}
			longest := 0
			for _, l := range partials[i] {
				longest = max(longest, len(l))
			}
			if longest < len(p) {
				out.IllegalKeys = append(out.IllegalKeys, p[0].Input.(kvInput).Key)
			}
		}
	}
	return out
}

// Check checks the cluster's history so far.
func (c *Cluster) Check(timeout time.Duration) CheckResult {
	return CheckHistory(c.History(), timeout)
}

// WriteHTML writes porcupine's visualisation of the checked history.
func (r CheckResult) WriteHTML(w io.Writer) error {
	return porcupine.Visualize(KVModel(), r.info, w)
}

// WriteHistoryJSON writes recs as a JSON array of Record.
func WriteHistoryJSON(w io.Writer, recs []Record) error {
	if recs == nil {
		recs = []Record{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(recs)
}

// ExportHistory writes the history to path: porcupine's HTML visualisation
// if the name ends in .html, else JSON. It returns the check result for HTML.
func (c *Cluster) ExportHistory(path string, timeout time.Duration) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if strings.EqualFold(filepath.Ext(path), ".html") {
		err = c.Check(timeout).WriteHTML(f)
	} else {
		err = WriteHistoryJSON(f, c.History())
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
