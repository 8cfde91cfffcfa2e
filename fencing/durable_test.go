package fencing

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"pgregory.net/rapid"
)

func openDurable(t *testing.T, path string) *DurableGuard {
	t.Helper()
	d, err := OpenDurableGuard(path)
	if err != nil {
		t.Fatalf("OpenDurableGuard: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func mustAdmit(t *testing.T, d *DurableGuard, scope string, tok Token) {
	t.Helper()
	if _, err := d.Admit(scope, tok); err != nil {
		t.Fatalf("Admit(%q, %d): %v", scope, tok, err)
	}
}

func TestDurableReopenKeepsFloors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "floors.log")
	d := openDurable(t, path)
	mustAdmit(t, d, "a", 5)
	mustAdmit(t, d, "b", 3)
	mustAdmit(t, d, "a", 5) // equal: admitted, nothing written
	if a, err := d.Check("a", 8); err != nil || !a.Raises() || d.Floor("a") != 5 {
		t.Fatalf("Check = %+v, %v; floor %d", a, err, d.Floor("a"))
	}
	if _, err := d.Admit("a", 4); !errors.Is(err, ErrStale) {
		t.Fatalf("stale token: %v", err)
	}
	sizeBefore := fileSize(t, path)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Admit("a", 9); !errors.Is(err, ErrClosed) {
		t.Fatalf("Admit after Close: %v", err)
	}

	d = openDurable(t, path)
	if got := d.Floors(); len(got) != 2 || got["a"] != 5 || got["b"] != 3 {
		t.Fatalf("floors after reopen: %v", got)
	}
	if _, err := d.Admit("a", 4); !errors.Is(err, ErrStale) {
		t.Fatalf("stale token after reopen: %v", err)
	}
	mustAdmit(t, d, "a", 7) // appending after reopen works
	if fileSize(t, path) <= sizeBefore {
		t.Fatal("the raised floor was not appended")
	}
	d.Close()

	d = openDurable(t, path)
	if d.Floor("a") != 7 || d.Floor("b") != 3 {
		t.Fatalf("floors after second reopen: %v", d.Floors())
	}
}

func TestDurableLockedByAnotherOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "floors.log")
	openDurable(t, path)
	if _, err := OpenDurableGuard(path); !errors.Is(err, ErrDirInUse) {
		t.Fatalf("second open: %v, want ErrDirInUse", err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func appendBytes(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func floorFrame(t *testing.T, scope string, tok Token) []byte {
	t.Helper()
	p, err := json.Marshal(floorRecord{Scope: scope, Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	return appendFrame(nil, p)
}

func TestDurableTornTailIsCutOff(t *testing.T) {
	cases := []struct {
		name string
		tail func(frame []byte) []byte
	}{
		{"partial header", func(f []byte) []byte { return f[:5] }},
		{"header only", func(f []byte) []byte { return f[:frameHeaderSize] }},
		{"half the payload", func(f []byte) []byte { return f[:frameHeaderSize+(len(f)-frameHeaderSize)/2] }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "floors.log")
			d := openDurable(t, path)
			mustAdmit(t, d, "a", 5)
			mustAdmit(t, d, "b", 2)
			d.Close()
			good := fileSize(t, path)

			// A crash while appending the floor 99 of "a": never acknowledged.
			appendBytes(t, path, tc.tail(floorFrame(t, "a", 99)))

			d = openDurable(t, path)
			if d.Floor("a") != 5 || d.Floor("b") != 2 {
				t.Fatalf("a torn record was accepted: floors %v", d.Floors())
			}
			if got := fileSize(t, path); got != good {
				t.Fatalf("file is %d bytes after open, want the torn tail cut to %d", got, good)
			}
			mustAdmit(t, d, "a", 6)
			d.Close()
			d = openDurable(t, path)
			if d.Floor("a") != 6 {
				t.Fatalf("append after the cut was lost: %v", d.Floors())
			}
		})
	}
}

// TestDurableFullLengthBadChecksumAtTheEndIsCorrupt: a final record that is
// there in full but fails its checksum may have been acknowledged; it is not
// cut off as torn. Nor is a header's worth of zeros or more: the file's
// length covers it, so it may be an acknowledged record whose bytes the disk
// lost.
func TestDurableFullLengthBadChecksumAtTheEndIsCorrupt(t *testing.T) {
	cases := []struct {
		name string
		tail func(frame []byte) []byte
	}{
		{"zero-filled record", func(f []byte) []byte { return make([]byte, len(f)) }},
		{"zeros only", func(f []byte) []byte { return make([]byte, 4096) }},
		{"a header's worth of zeros", func(f []byte) []byte { return make([]byte, frameHeaderSize) }},
		{"garbage header then zeros", func(f []byte) []byte {
			return append([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, make([]byte, 100)...)
		}},
		{"payload zeroed at the end", func(f []byte) []byte {
			g := bytes.Clone(f)
			clear(g[len(g)-4:])
			return g
		}},
		{"frame then zeros", func(f []byte) []byte {
			g := bytes.Clone(f)
			g[len(g)-1] ^= 0xff
			return append(g, make([]byte, 4096)...)
		}},
		{"one bit flipped", func(f []byte) []byte {
			g := bytes.Clone(f)
			g[frameHeaderSize+1] ^= 0x01
			return g
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "floors.log")
			d := openDurable(t, path)
			mustAdmit(t, d, "a", 5)
			d.Close()
			good := fileSize(t, path)
			appendBytes(t, path, tc.tail(floorFrame(t, "a", 900)))
			before, _ := os.ReadFile(path)
			_, err := OpenDurableGuard(path)
			var ce *CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("open = %v, want a *CorruptError", err)
			}
			if ce.Offset != good || ce.Path != path {
				t.Fatalf("CorruptError %+v: want offset %d path %s", ce, good, path)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
				t.Fatal("open changed a corrupt log")
			}
		})
	}
}

func TestDurableCorruptMiddleRecordIsAnError(t *testing.T) {
	cases := []struct {
		name string
		at   func(frameLen int) int // offset of the flipped byte in the first frame
	}{
		{"payload", func(n int) int { return n - 2 }},
		{"length", func(int) int { return 0 }},
		{"payload checksum", func(int) int { return 5 }},
		{"header checksum", func(int) int { return 9 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "floors.log")
			d := openDurable(t, path)
			mustAdmit(t, d, "a", 5)
			mustAdmit(t, d, "a", 6)
			d.Close()
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			first := len(floorFrame(t, "a", 5))
			data[tc.at(first)] ^= 0x41
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := OpenDurableGuard(path); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("open = %v, want ErrCorrupt", err)
			}
			after, _ := os.ReadFile(path)
			if !bytes.Equal(after, data) {
				t.Fatal("open changed a corrupt log")
			}
		})
	}
}

func TestDurableCompactsAtOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "floors.log")
	d := openDurable(t, path)
	n := Token(compactAbove*3 + 10) // above the threshold for two scopes
	for tok := Token(1); tok <= n; tok++ {
		mustAdmit(t, d, "a", tok)
	}
	mustAdmit(t, d, "b", 3)
	d.Close()
	big := fileSize(t, path)
	d = openDurable(t, path)
	if d.Floor("a") != n || d.Floor("b") != 3 {
		t.Fatalf("floors after compaction: %v", d.Floors())
	}
	if small := fileSize(t, path); small >= big/10 {
		t.Fatalf("log not compacted: %d -> %d bytes", big, small)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("temporary file left behind: %v", err)
	}
	mustAdmit(t, d, "a", n+1)
	d.Close()
	d = openDurable(t, path)
	if d.Floor("a") != n+1 {
		t.Fatalf("append after compaction lost: %v", d.Floors())
	}
}

// TestDurablePropertyCrashAtAnyByte: cutting a log anywhere (a crash at any
// point of any append), perhaps followed by zeros, opens as exactly the
// records that were complete — unless what follows them holds a whole
// header that cannot be read, or a readable header whose record is there in
// full: that is corruption, since an acknowledged record may look the same.
func TestDurablePropertyCrashAtAnyByte(t *testing.T) {
	dir := t.TempDir()
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 20).Draw(t, "records")
		var data []byte
		var ends []int
		for i := range n {
			p := bytes.Repeat([]byte{byte('a' + i%26)}, rapid.IntRange(0, 300).Draw(t, "len"))
			data = appendFrame(data, p)
			ends = append(ends, len(data))
		}
		cut := rapid.IntRange(0, len(data)).Draw(t, "cut")
		pad := rapid.IntRange(0, 64).Draw(t, "zeros")
		path := filepath.Join(dir, "crash.log")
		if err := os.WriteFile(path, append(bytes.Clone(data[:cut]), make([]byte, pad)...), 0o644); err != nil {
			t.Fatal(err)
		}
		want := 0
		for _, e := range ends {
			if e <= cut {
				want++
			}
		}
		// The zeros may fill the frame the cut went through to its full
		// length, its header readable: that is a full-length record with a
		// bad checksum. Or they may fill a whole header that cannot be
		// read. Open refuses both (it cannot tell them from a record
		// damaged after it was acknowledged) and leaves the file as it is.
		start := 0
		if want > 0 {
			start = ends[want-1]
		}
		file := append(bytes.Clone(data[:cut]), make([]byte, pad)...)
		if rest := file[start:]; len(rest) >= frameHeaderSize {
			readable := crc32.Checksum(rest[0:8], castagnoli) == binary.LittleEndian.Uint32(rest[8:12])
			if !readable || (want < n && cut+pad >= ends[want]) {
				_, _, err := openLog(path, func([]byte) error { return nil })
				var ce *CorruptError
				if !errors.As(err, &ce) || ce.Offset != int64(start) {
					t.Fatalf("cut at %d + %d zeros filling record %d: open = %v, want a CorruptError at %d", cut, pad, want, err, start)
				}
				if after, _ := os.ReadFile(path); !bytes.Equal(after, file) {
					t.Fatal("a refused open changed the log")
				}
				return
			}
		}
		got := 0
		l, info, err := openLog(path, func([]byte) error { got++; return nil })
		if err != nil {
			t.Fatalf("open after a cut at %d: %v", cut, err)
		}
		l.close()
		// An empty payload followed by zeros is still a valid record, so a
		// cut exactly at a frame end is the only case where zeros could
		// extend a record: they never do, the payload length is in the header.
		if got != want || info.Records != want {
			t.Fatalf("cut at %d of %d: replayed %d records, want %d", cut, len(data), got, want)
		}
		goodLen := 0
		if want > 0 {
			goodLen = ends[want-1]
		}
		st, _ := os.Stat(path)
		if st.Size() != int64(goodLen) {
			t.Fatalf("file %d bytes after open, want %d", st.Size(), goodLen)
		}
	})
}

func TestDurableFailedWriteDoesNotRaiseFloor(t *testing.T) {
	d := openDurable(t, filepath.Join(t.TempDir(), "floors.log"))
	mustAdmit(t, d, "a", 5)
	d.log.f.Close() // the disk goes away under the log
	if _, err := d.Admit("a", 9); !errors.Is(err, ErrClosed) {
		t.Fatalf("Admit on a broken log: %v", err)
	}
	if d.Floor("a") != 5 {
		t.Fatalf("floor raised to %d although it was not persisted", d.Floor("a"))
	}
	if _, err := d.Admit("a", 5); err != nil {
		t.Fatalf("a token equal to the floor needs no write: %v", err)
	}
}

func TestDurableConcurrentAdmitsSurviveReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "floors.log")
	d := openDurable(t, path)
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				scope := []string{"a", "b", "c"}[(w+i)%3]
				if _, err := d.Admit(scope, Token(1+(w*13+i*7)%50)); err != nil && !errors.Is(err, ErrStale) {
					t.Errorf("Admit: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	want := d.Floors()
	d.Close()
	d = openDurable(t, path)
	if got := d.Floors(); !maps.Equal(got, want) {
		t.Fatalf("floors after reopen %v, before %v", got, want)
	}
}

// FuzzReplayFrames: replay never panics on arbitrary bytes, and what it
// accepts is a prefix of the input.
func FuzzReplayFrames(f *testing.F) {
	f.Add([]byte{})
	f.Add(appendFrame(nil, []byte(`{"scope":"a","token":1}`)))
	f.Add(appendFrame(appendFrame(nil, []byte("x")), []byte("yz"))[:20])
	f.Add(make([]byte, 40))
	f.Fuzz(func(t *testing.T, data []byte) {
		n := 0
		good, err := replayFrames(data, func(p []byte) error { n += len(p) + frameHeaderSize; return nil })
		if good < 0 || good > int64(len(data)) {
			t.Fatalf("good prefix %d of %d bytes", good, len(data))
		}
		if err == nil && int64(n) != good {
			t.Fatalf("replayed %d bytes of frames, good prefix %d", n, good)
		}
		if rest := data[good:]; err == nil && len(rest) >= frameHeaderSize {
			// A tail that was cut is a readable header whose record runs
			// past the end of the file.
			if crc32.Checksum(rest[0:8], castagnoli) != binary.LittleEndian.Uint32(rest[8:12]) {
				t.Fatalf("cut off an unreadable header at %d as a torn tail", good)
			}
			if n := binary.LittleEndian.Uint32(rest[0:4]); frameHeaderSize+int64(n) <= int64(len(rest)) {
				t.Fatalf("cut off a full-length record at %d", good)
			}
		}
	})
}

// The floor of every scope is durable, survives compaction, and a binary
// that predates it would refuse the log (its record names no scope).
func TestDurableRaiseAllSurvivesReopenAndCompaction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "floors.log")
	d := openDurable(t, path)
	mustAdmit(t, d, "a", 5)
	if err := d.RaiseAll(40); err != nil {
		t.Fatal(err)
	}
	if err := d.RaiseAll(0); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("RaiseAll(0) = %v", err)
	}
	for i := range compactAbove * 3 {
		mustAdmit(t, d, "b", Token(41+i))
	}
	d.Close()
	for range 2 { // the second open reads the compacted log
		d = openDurable(t, path)
		if d.FloorAll() != 40 || d.Floor("a") != 40 || d.Floor("unseen") != 40 {
			t.Fatalf("after reopen: all %d, a %d, unseen %d; want 40", d.FloorAll(), d.Floor("a"), d.Floor("unseen"))
		}
		if _, err := d.Admit("unseen", 39); !errors.Is(err, ErrStale) {
			t.Fatalf("token 39 in a scope never seen: %v", err)
		}
		d.Close()
	}
	data, _ := os.ReadFile(path)
	if err := checkArgs("", 40); !bytes.Contains(data, []byte(`"scope":"","token":40,"all":true`)) || err == nil {
		t.Fatalf("the record of every scope's floor must have a scope no older binary accepts: %q", data)
	}
}
