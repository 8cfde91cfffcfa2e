package fencing

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// lastFrame returns the offset of the last frame of a sound log.
func lastFrame(t *testing.T, data []byte) int {
	t.Helper()
	off, last := 0, -1
	for off < len(data) {
		last = off
		off += frameHeaderSize + int(binary.LittleEndian.Uint32(data[off:off+4]))
	}
	if last < 0 || off != len(data) {
		t.Fatalf("not a sound log of frames: %d bytes, frames end at %d", len(data), off)
	}
	return last
}

// flipIn flips bits of the first byte of frame that starts what.
func flipIn(what string, bits byte) func(t *testing.T, frame []byte) {
	return func(t *testing.T, frame []byte) {
		t.Helper()
		i := bytes.Index(frame, []byte(what))
		if i < 0 {
			t.Fatalf("%q not in the record %q", what, frame[frameHeaderSize:])
		}
		frame[i] ^= bits
	}
}

// TestRepairNeverLowersAFloor: issue 31's reproductions. The last record of
// the log (a fence at 14 in scope "f", after a put at 5 and a fence at 13)
// is damaged in place by one flipped bit — one that makes it undecodable,
// one that turns its token 14 into 10, one that turns its scope "f" into
// "g" — or zero-filled. Whatever a damaged record seems to say, none of it
// is evidence: a repair without a bound refuses and changes no byte; with a
// bound (20: no granted token exceeds it) the floor of "f", and of a scope
// the log never named, is 20, so 13 and 19 are refused there.
func TestRepairNeverLowersAFloor(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, frame []byte)
	}{
		{"a bit flipped in the type: undecodable", flipIn(`{"t":`, 0x01)},
		{"a bit flipped in the token: 14 reads as 10", flipIn(`4,"scope"`, 0x04)},
		{"a bit flipped in the scope: f reads as g", flipIn(`f","time"`, 0x01)},
		{"zero-filled last record", func(t *testing.T, frame []byte) { clear(frame) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			rs := startResource(t, dir, false)
			if _, err := rs.client.Put(ctxT(t), "a", "one", 5, "f"); err != nil {
				t.Fatal(err)
			}
			for _, tok := range []Token{13, 14} {
				if _, err := rs.client.Fence(ctxT(t), tok, "f"); err != nil {
					t.Fatal(err)
				}
			}
			rs.stop()
			path := filepath.Join(dir, resourceLogName)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			tc.damage(t, data[lastFrame(t, data):])
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}

			if _, err := NewResource(ResourceConfig{DataDir: dir}); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("NewResource on the damaged log = %v, want ErrCorrupt (not a torn tail)", err)
			}
			plan, err := Repair(dir, RepairOptions{})
			if err != nil || !plan.NeedsBound || len(plan.Refence) != 0 || plan.Dropped[0].Trusted {
				t.Fatalf("dry run = %+v, %v: want an untrusted record, no re-fence, a bound needed", plan, err)
			}
			if plan.HighestKept != 13 || plan.HighestScope != "f" {
				t.Fatalf("highest kept floor %d in %q, want 13 in f", plan.HighestKept, plan.HighestScope)
			}
			plan, err = Repair(dir, RepairOptions{Apply: true})
			if !errors.Is(err, ErrRepairNeedsBound) || plan.Applied {
				t.Fatalf("repair without a bound = %+v, %v; want ErrRepairNeedsBound", plan, err)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, data) {
				t.Fatal("a refused repair changed the log")
			}
			if _, err := os.Stat(path + ".before-repair"); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a refused repair left a backup: %v", err)
			}
			if _, err := Repair(dir, RepairOptions{Apply: true, Bound: 12}); !errors.Is(err, ErrBoundBelowFloor) {
				t.Fatalf("a bound below the kept floor 13: %v, want ErrBoundBelowFloor", err)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, data) {
				t.Fatal("a refused repair changed the log")
			}

			if plan, err = Repair(dir, RepairOptions{Apply: true, Bound: 20}); err != nil || !plan.Applied || plan.Bound != 20 {
				t.Fatalf("repair with bound 20 = %+v, %v", plan, err)
			}
			rs = startResource(t, dir, false)
			for _, scope := range []string{"f", "g", "never/named"} {
				if f := rs.res.Floor(scope); f != 20 {
					t.Errorf("floor of %q after the repair = %d, want the bound 20", scope, f)
				}
			}
			for _, stale := range []struct {
				scope string
				tok   Token
			}{{"f", 13}, {"f", 14}, {"g", 19}, {"never/named", 19}} {
				if _, err := rs.client.Put(ctxT(t), "a", "late", stale.tok, stale.scope); !errors.Is(err, ErrStale) {
					t.Errorf("put with token %d in %q after the repair: %v, want ErrStale", stale.tok, stale.scope, err)
				}
				if _, err := rs.client.Fence(ctxT(t), stale.tok, stale.scope); !errors.Is(err, ErrStale) {
					t.Errorf("fence with token %d in %q after the repair: %v, want ErrStale", stale.tok, stale.scope, err)
				}
			}
			if _, err := rs.client.Put(ctxT(t), "b", "next holder", 20, "never/named"); err != nil {
				t.Fatalf("a token at the bound: %v", err)
			}
			fl, err := rs.client.Floors(ctxT(t))
			if err != nil || fl.All != 20 || fl.Highest != 20 {
				t.Fatalf("floors after the repair = %+v, %v; want every scope at 20", fl, err)
			}
			rs.stop()
			if plan, err := Repair(dir, RepairOptions{}); err != nil || plan.NeedsRepair() {
				t.Fatalf("the repaired log: %+v, %v", plan, err)
			}
		})
	}
}

// A record after the damage whose checksum matches is trusted: its floor is
// re-fenced, and a bound below it is refused.
func TestRepairTrustsIntactRecordsAfterTheDamage(t *testing.T) {
	dir := t.TempDir()
	rs := startResource(t, dir, false)
	for _, tok := range []Token{13, 14, 30} {
		if _, err := rs.client.Fence(ctxT(t), tok, "f"); err != nil {
			t.Fatal(err)
		}
	}
	rs.stop()
	path := filepath.Join(dir, resourceLogName)
	data, _ := os.ReadFile(path)
	last := lastFrame(t, data)
	second := bytes.LastIndex(data[:last], []byte(`14,"scope"`))
	data[second] ^= 0x04 // the fence at 14 reads 10
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	plan, err := Repair(dir, RepairOptions{})
	if err != nil || len(plan.Dropped) != 2 || plan.Dropped[0].Trusted || !plan.Dropped[1].Trusted {
		t.Fatalf("plan %+v, %v: want the damaged fence untrusted, the fence at 30 after it trusted", plan, err)
	}
	if plan.HighestKept != 30 {
		t.Fatalf("highest floor %d, want the trusted 30", plan.HighestKept)
	}
	if _, err := Repair(dir, RepairOptions{Apply: true, Bound: 25}); !errors.Is(err, ErrBoundBelowFloor) {
		t.Fatalf("bound 25 below the trusted floor 30: %v", err)
	}
	if plan, err = Repair(dir, RepairOptions{Apply: true, Bound: 30}); err != nil || !plan.Applied {
		t.Fatalf("repair at bound 30: %+v, %v", plan, err)
	}
	rs = startResource(t, dir, false)
	if _, err := rs.client.Fence(ctxT(t), 29, "other"); !errors.Is(err, ErrStale) {
		t.Fatalf("token 29 in another scope after a repair at 30: %v", err)
	}
}
