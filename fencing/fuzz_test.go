package fencing

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"net/http"
	"testing"
)

func fuzzLog(f *testing.F) []byte {
	var log []byte
	for _, r := range []resourceRecord{
		{Type: "write", Seq: 1, Key: "a", Value: "one", Token: 5, Scope: "s", Version: 1},
		{Type: "fence", Token: 900, Scope: "s"},
		{Type: "reject", Token: 4, Scope: "s"},
	} {
		p, err := json.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		log = appendFrame(log, p)
	}
	return log
}

// FuzzReplayLog feeds arbitrary bytes to the resource's log recovery. It
// must not panic, and it may cut off only a short tail: a partial header, or
// a header whose length runs past the end. Anything else it does not replay is a *CorruptError at
// the offset where replay stopped.
func FuzzReplayLog(f *testing.F) {
	log := fuzzLog(f)
	f.Add(log)
	f.Add(log[:len(log)-3])
	f.Add(append(bytes.Clone(log), make([]byte, 64)...))
	flipped := bytes.Clone(log)
	flipped[len(flipped)-2] ^= 1
	f.Add(flipped)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &Resource{kv: map[string]Entry{}, idem: map[string]idemRecord{}, rejected: map[string]int{}}
		good, err := replayFrames(data, r.replay)
		if good < 0 || good > int64(len(data)) {
			t.Fatalf("good = %d of %d bytes", good, len(data))
		}
		if err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("replay error %v is not a *CorruptError", err)
			}
			if ce.Offset != good {
				t.Fatalf("CorruptError at %d, replay stopped at %d", ce.Offset, good)
			}
			_ = ce.Error()
			return
		}
		rest := data[good:]
		switch {
		case len(rest) == 0, len(rest) < frameHeaderSize:
		case crc32.Checksum(rest[0:8], castagnoli) != binary.LittleEndian.Uint32(rest[8:12]):
			t.Fatalf("cut off an unreadable header at %d (zeros or not, it may hide an acknowledged record)", good)
		default:
			if n := binary.LittleEndian.Uint32(rest[0:4]); frameHeaderSize+int64(n) <= int64(len(rest)) {
				t.Fatalf("cut off a full-length record at %d as a torn tail", good)
			}
		}
		// Every floor comes from a record that replayed.
		for scope, tok := range r.guard.Floors() {
			if !tok.Valid() || ValidateScope(scope) != nil {
				t.Fatalf("replay admitted floor %d for scope %q", tok, scope)
			}
		}
	})
}

// FuzzFencingHeaders feeds arbitrary Fencing-Token and Fencing-Scope values
// to the resource's header parsing. Accepted tokens have one spelling: the
// header is exactly the token's decimal form (no leading zeros, sign or
// spaces); accepted scopes pass ValidateScope.
func FuzzFencingHeaders(f *testing.F) {
	for _, s := range [][2]string{
		{"5", "jobs"}, {"05", "jobs"}, {"0", "s"}, {"-1", "s"}, {"+5", "s"}, {" 5", "s"},
		{"9223372036854775807", "s"}, {"9223372036854775808", "s"}, {"", ""}, {"1", "a\x00b"},
		{"٣", "s"}, {"1e3", "s"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, token, scope string) {
		tok, perr := ParseToken(token)
		if perr == nil && (!tok.Valid() || tok.String() != token) {
			t.Fatalf("ParseToken(%q) = %d: not the canonical spelling", token, tok)
		}
		if perr != nil && (!errors.Is(perr, ErrInvalidToken) || tok != 0) {
			t.Fatalf("ParseToken(%q) = %d, %v", token, tok, perr)
		}
		req, err := http.NewRequest("PUT", "http://x/v1/kv/k", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header[HeaderToken] = []string{token}
		req.Header[HeaderScope] = []string{scope}
		got, gotScope, err := parseFencing(req)
		if err != nil {
			return
		}
		if perr != nil || got != tok || gotScope != scope {
			t.Fatalf("parseFencing(%q, %q) = %d, %q; ParseToken: %v", token, scope, got, gotScope, perr)
		}
		if ValidateScope(gotScope) != nil {
			t.Fatalf("accepted scope %q", gotScope)
		}
	})
}
