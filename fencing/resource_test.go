package fencing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

var testTime = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// resourceServer is a Resource on a real loopback HTTP server.
type resourceServer struct {
	res    *Resource
	srv    *httptest.Server
	client *Client
	dir    string
}

func startResource(t *testing.T, dir string, unfenced bool) *resourceServer {
	t.Helper()
	res, err := NewResource(ResourceConfig{DataDir: dir, Unfenced: unfenced, Clock: fixedClock{testTime}})
	if err != nil {
		t.Fatalf("NewResource: %v", err)
	}
	srv := httptest.NewServer(res)
	rs := &resourceServer{res: res, srv: srv, dir: dir, client: &Client{BaseURL: srv.URL, HTTP: srv.Client()}}
	t.Cleanup(rs.stop)
	return rs
}

func (rs *resourceServer) stop() {
	rs.srv.Close()
	rs.res.Close()
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

type rawResponse struct {
	status int
	header http.Header
	body   map[string]any
}

// do sends a raw request, so the tests check the wire format, not the client.
func (rs *resourceServer) do(t *testing.T, method, path string, headers map[string]string, body string) rawResponse {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), method, rs.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := rs.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s %s: Content-Type %q, body %s", method, path, ct, b)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s %s: body is not a JSON object: %s", method, path, b)
	}
	return rawResponse{status: resp.StatusCode, header: resp.Header, body: m}
}

func fenced(tok, scope string) map[string]string {
	return map[string]string{HeaderToken: tok, HeaderScope: scope}
}

func with(h map[string]string, k, v string) map[string]string {
	h[k] = v
	return h
}

func TestResourceHTTPStatuses(t *testing.T) {
	rs := startResource(t, t.TempDir(), false)
	ok := rs.do(t, "PUT", "/v1/kv/config", fenced("10", "jobs"), "v1")
	if ok.status != 200 {
		t.Fatalf("first put: %d %v", ok.status, ok.body)
	}
	want := map[string]any{"key": "config", "token": 10.0, "scope": "jobs", "seq": 1.0, "version": 1.0}
	for k, v := range want {
		if ok.body[k] != v {
			t.Fatalf("put answer %v: %s = %v, want %v", ok.body, k, ok.body[k], v)
		}
	}
	if ok.header.Get("ETag") != `"1"` {
		t.Fatalf("ETag %q", ok.header.Get("ETag"))
	}

	cases := []struct {
		name     string
		method   string
		path     string
		headers  map[string]string
		body     string
		status   int
		errorHas string
		fields   map[string]any
	}{
		{"stale token", "PUT", "/v1/kv/config", fenced("9", "jobs"), "late", 409, "stale fencing token",
			map[string]any{"token": 9.0, "floor": 10.0}},
		{"equal token", "PUT", "/v1/kv/config", fenced("10", "jobs"), "v2", 200, "", map[string]any{"seq": 2.0, "version": 2.0}},
		{"other scope is independent", "PUT", "/v1/kv/other", fenced("1", "reports"), "x", 200, "", nil},
		{"missing token", "PUT", "/v1/kv/config", map[string]string{HeaderScope: "jobs"}, "x", 400, "missing Fencing-Token", nil},
		{"token abc", "PUT", "/v1/kv/config", fenced("abc", "jobs"), "x", 400, "Fencing-Token", nil},
		{"token zero", "PUT", "/v1/kv/config", fenced("0", "jobs"), "x", 400, "positive", nil},
		{"token negative", "PUT", "/v1/kv/config", fenced("-3", "jobs"), "x", 400, "positive", nil},
		{"token with a leading zero", "PUT", "/v1/kv/config", fenced("05", "jobs"), "x", 400, "leading zeros", nil},
		{"token overflow", "PUT", "/v1/kv/config", fenced("99999999999999999999", "jobs"), "x", 400, "out of range", nil},
		{"missing scope", "PUT", "/v1/kv/config", map[string]string{HeaderToken: "11"}, "x", 400, "missing Fencing-Scope", nil},
		{"body over 1 MiB", "PUT", "/v1/kv/config", fenced("11", "jobs"), strings.Repeat("x", MaxValueSize+1), 413, "larger than", nil},
		{"body of exactly 1 MiB", "PUT", "/v1/kv/big", fenced("11", "jobs"), strings.Repeat("x", MaxValueSize), 200, "", nil},
		{"if-match mismatch", "PUT", "/v1/kv/config", with(fenced("11", "jobs"), HeaderIfMatch, "1"), "x", 412, "version mismatch",
			map[string]any{"version": 2.0}},
		{"if-match malformed", "PUT", "/v1/kv/config", with(fenced("11", "jobs"), HeaderIfMatch, "v2"), "x", 400, "If-Match", nil},
		{"if-match 0 on existing key", "PUT", "/v1/kv/config", with(fenced("11", "jobs"), HeaderIfMatch, "0"), "x", 412, "", nil},
		{"if-match match (quoted)", "PUT", "/v1/kv/config", with(fenced("11", "jobs"), HeaderIfMatch, `"2"`), "v3", 200, "",
			map[string]any{"version": 3.0}},
		{"if-match 0 creates", "PUT", "/v1/kv/fresh", with(fenced("11", "jobs"), HeaderIfMatch, "0"), "new", 200, "", nil},
		{"idempotent first", "PUT", "/v1/kv/idem", with(fenced("11", "jobs"), HeaderIdempotencyKey, "k1"), "a", 200, "", nil},
		{"idempotency key, other body", "PUT", "/v1/kv/idem", with(fenced("11", "jobs"), HeaderIdempotencyKey, "k1"), "b", 422,
			"idempotency key", nil},
		{"get", "GET", "/v1/kv/config", nil, "", 200, "", map[string]any{"key": "config", "value": "v3", "token": 11.0,
			"scope": "jobs", "version": 3.0}},
		{"get missing", "GET", "/v1/kv/nothing", nil, "", 404, "key not found", nil},
		{"not UTF-8", "PUT", "/v1/kv/bin", fenced("11", "jobs"), "\xff\xfe", 400, "UTF-8", nil},
		{"fence stale", "POST", "/v1/fence", fenced("3", "jobs"), "", 409, "stale fencing token", map[string]any{"floor": 11.0}},
		{"fence", "POST", "/v1/fence", fenced("20", "jobs"), "", 200, "", map[string]any{"scope": "jobs", "token": 20.0, "floor": 20.0}},
		{"write below the fence", "PUT", "/v1/kv/config", fenced("11", "jobs"), "x", 409, "stale", map[string]any{"floor": 20.0}},
		{"fence without token", "POST", "/v1/fence", map[string]string{HeaderScope: "jobs"}, "", 400, "Fencing-Token", nil},
		{"unknown endpoint", "GET", "/v2/nothing", nil, "", 404, "no such endpoint", nil},
		{"empty key", "PUT", "/v1/kv/", fenced("20", "jobs"), "x", 400, "empty key", nil},
		{"key too long", "PUT", "/v1/kv/" + strings.Repeat("k", MaxKeyLen+1), fenced("20", "jobs"), "x", 400, "longer", nil},
		{"method not allowed", "DELETE", "/v1/kv/config", fenced("20", "jobs"), "", 405, "not allowed", nil},
		{"fence by GET", "GET", "/v1/fence", fenced("20", "jobs"), "", 405, "not allowed", nil},
		{"log by POST", "POST", "/v1/log", nil, "", 405, "not allowed", nil},
		{"long idempotency key", "PUT", "/v1/kv/config", with(fenced("20", "jobs"), HeaderIdempotencyKey, strings.Repeat("i", MaxIdempotencyKeyLen+1)), "x", 400, "Idempotency-Key", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := rs.do(t, tc.method, tc.path, tc.headers, tc.body)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %v", r.status, tc.status, r.body)
			}
			if tc.errorHas != "" {
				if msg, _ := r.body["error"].(string); !strings.Contains(msg, tc.errorHas) {
					t.Fatalf("error %q does not say %q", msg, tc.errorHas)
				}
			}
			for k, v := range tc.fields {
				if r.body[k] != v {
					t.Fatalf("answer %v: %s = %v, want %v", r.body, k, r.body[k], v)
				}
			}
		})
	}

	// The audit log shows the accepted writes in order and counts the 3 stale requests.
	l, err := rs.client.Log(ctxT(t), "jobs")
	if err != nil {
		t.Fatal(err)
	}
	if l.Rejected != 3 || l.Floors["jobs"] != 20 {
		t.Fatalf("log: rejected %d, floors %v", l.Rejected, l.Floors)
	}
	var last Token
	for i, w := range l.Writes {
		if w.Scope != "jobs" || w.Token < last || (i > 0 && w.Seq <= l.Writes[i-1].Seq) || !w.Time.Equal(testTime) {
			t.Fatalf("log out of order or mis-stamped: %+v", l.Writes)
		}
		last = w.Token
	}
	all, err := rs.client.Log(ctxT(t), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Writes) != len(l.Writes)+1 || all.Writes[2].Scope != "reports" {
		t.Fatalf("log of all scopes: %+v", all.Writes)
	}
}

func TestResourceClientErrors(t *testing.T) {
	rs := startResource(t, t.TempDir(), false)
	ctx, c := ctxT(t), rs.client
	if _, err := c.Put(ctx, "k", "v", 5, "s"); err != nil {
		t.Fatal(err)
	}
	_, err := c.Put(ctx, "k", "late", 4, "s")
	var se *StaleError
	if !errors.As(err, &se) || !errors.Is(err, ErrStale) || *se != (StaleError{Scope: "s", Token: 4, Floor: 5}) {
		t.Fatalf("stale put: %#v", err)
	}
	if _, err := c.Fence(ctx, 3, "s"); !errors.As(err, &se) || se.Floor != 5 {
		t.Fatalf("stale fence: %v", err)
	}
	if _, err := c.Get(ctx, "missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get missing: %v", err)
	}
	if _, err := c.Put(ctx, "k", "v", 5, "s", IfMatch(7)); !errors.Is(err, ErrVersionMismatch) || !strings.Contains(err.Error(), "current version 1") {
		t.Fatalf("if-match: %v", err)
	}
	for _, n := range []int{MaxValueSize + 1, 8 * MaxValueSize} {
		if _, err := c.Put(ctx, "k", strings.Repeat("x", n), 5, "s"); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("value of %d bytes: %v", n, err)
		}
	}
	if _, err := c.Put(ctx, "k", "v", 5, ""); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("no scope: %v", err)
	}
	var ae *APIError
	if _, err := c.Put(ctx, "k", "v", 0, "s"); !errors.As(err, &ae) || ae.StatusCode != 400 || !strings.Contains(ae.Message, "positive") {
		t.Fatalf("token 0: %v", err)
	}
	if _, err := c.Put(ctx, "i", "a", 5, "s", WithIdempotencyKey("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, "i", "b", 5, "s", WithIdempotencyKey("x")); !errors.Is(err, ErrIdempotencyConflict) {
		t.Fatalf("idempotency conflict: %v", err)
	}
	// Keys with slashes, spaces and non-ASCII characters round-trip.
	for _, key := range []string{"a/b/c", "with space", "ключ", "q?x=1#f", "..", ".", "%2F", "a//b", "/lead", "trail/"} {
		if _, err := c.Put(ctx, key, "val "+key, 6, "s"); err != nil {
			t.Fatalf("put %q: %v", key, err)
		}
		e, err := c.Get(ctx, key)
		if err != nil || e.Key != key || e.Value != "val "+key {
			t.Fatalf("get %q: %+v %v", key, e, err)
		}
	}
	rs.res.Close()
	if _, err := c.Get(ctx, "k"); !errors.Is(err, ErrClosed) {
		t.Fatalf("get after Close: %v", err)
	}
	if _, err := c.Put(ctx, "k", "v", 9, "s"); !errors.Is(err, ErrClosed) {
		t.Fatalf("put after Close: %v", err)
	}
}

func TestResourceIdempotentRetryAppliedOnce(t *testing.T) {
	dir := t.TempDir()
	rs := startResource(t, dir, false)
	ctx, c := ctxT(t), rs.client
	first, err := c.Put(ctx, "counter", "1", 7, "s", WithIdempotencyKey("req-1"))
	if err != nil {
		t.Fatal(err)
	}
	retry := rs.do(t, "PUT", "/v1/kv/counter", with(fenced("7", "s"), HeaderIdempotencyKey, "req-1"), "1")
	if retry.status != 200 || retry.body["seq"] != float64(first.Seq) || retry.header.Get(HeaderReplayed) != "true" {
		t.Fatalf("retry: %d %v %v", retry.status, retry.body, retry.header)
	}
	// A newer holder fences; the old holder's retry of its acknowledged write
	// still gets its first answer: it was applied, before the fence.
	if _, err := c.Fence(ctx, 8, "s"); err != nil {
		t.Fatal(err)
	}
	again, err := c.Put(ctx, "counter", "1", 7, "s", WithIdempotencyKey("req-1"))
	if err != nil || again != first {
		t.Fatalf("retry after fence: %+v %v, want %+v", again, err, first)
	}
	l, _ := c.Log(ctx, "")
	if len(l.Writes) != 1 {
		t.Fatalf("the write was applied %d times", len(l.Writes))
	}

	// Idempotency records are durable.
	rs.stop()
	rs = startResource(t, dir, false)
	again, err = rs.client.Put(ctx, "counter", "1", 7, "s", WithIdempotencyKey("req-1"))
	if err != nil || again != first {
		t.Fatalf("retry after restart: %+v %v, want %+v", again, err, first)
	}
	if _, err := rs.client.Put(ctx, "counter", "2", 7, "s", WithIdempotencyKey("req-1")); !errors.Is(err, ErrIdempotencyConflict) {
		t.Fatalf("conflict after restart: %v", err)
	}
	if l, _ := rs.client.Log(ctx, ""); len(l.Writes) != 1 {
		t.Fatalf("after restart the write appears %d times", len(l.Writes))
	}
}

func TestResourceReopenKeepsFloorsAndData(t *testing.T) {
	dir := t.TempDir()
	rs := startResource(t, dir, false)
	ctx := ctxT(t)
	if _, err := rs.client.Put(ctx, "a", "one", 5, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.client.Fence(ctx, 12, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.client.Put(ctx, "a", "late", 6, "s"); !errors.Is(err, ErrStale) {
		t.Fatalf("stale before restart: %v", err)
	}
	if _, err := NewResource(ResourceConfig{DataDir: dir}); !errors.Is(err, ErrDirInUse) {
		t.Fatalf("a second resource on the same directory: %v, want ErrDirInUse", err)
	}
	rs.stop()

	rs = startResource(t, dir, false)
	c := rs.client
	var se *StaleError
	if _, err := c.Put(ctx, "a", "late", 11, "s"); !errors.As(err, &se) || se.Floor != 12 {
		t.Fatalf("the fence did not survive the restart: %v", err)
	}
	e, err := c.Get(ctx, "a")
	if err != nil || e.Value != "one" || e.Version != 1 || e.Token != 5 {
		t.Fatalf("get after restart: %+v %v", e, err)
	}
	res, err := c.Put(ctx, "a", "two", 12, "s", IfMatch(1))
	if err != nil || res.Seq != 2 || res.Version != 2 {
		t.Fatalf("put after restart: %+v %v", res, err)
	}
	l, err := c.Log(ctx, "s")
	if err != nil || l.Rejected != 2 || len(l.Writes) != 2 {
		t.Fatalf("log after restart: %+v %v", l, err)
	}
}

func TestResourceTornTailIsCutOff(t *testing.T) {
	dir := t.TempDir()
	rs := startResource(t, dir, false)
	if _, err := rs.client.Put(ctxT(t), "a", "one", 5, "s"); err != nil {
		t.Fatal(err)
	}
	rs.stop()
	path := filepath.Join(dir, resourceLogName)
	p, _ := json.Marshal(resourceRecord{Type: "write", Seq: 2, Key: "a", Value: "torn", Token: 9, Scope: "s", Version: 2})
	frame := appendFrame(nil, p)
	appendBytes(t, path, frame[:len(frame)-3])

	rs = startResource(t, dir, false)
	e, err := rs.client.Get(ctxT(t), "a")
	if err != nil || e.Value != "one" || rs.res.Floor("s") != 5 {
		t.Fatalf("a torn write was accepted: %+v %v floor %d", e, err, rs.res.Floor("s"))
	}
	if res, err := rs.client.Put(ctxT(t), "a", "two", 6, "s"); err != nil || res.Seq != 2 {
		t.Fatalf("append after the cut: %+v %v", res, err)
	}
}

func TestResourceCorruptLogRefusesToOpen(t *testing.T) {
	dir := t.TempDir()
	rs := startResource(t, dir, false)
	for i := range 3 {
		if _, err := rs.client.Put(ctxT(t), "a", fmt.Sprint(i), 5, "s"); err != nil {
			t.Fatal(err)
		}
	}
	rs.stop()
	path := filepath.Join(dir, resourceLogName)
	data, _ := os.ReadFile(path)
	data[frameHeaderSize+3] ^= 0x20
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewResource(ResourceConfig{DataDir: dir}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("NewResource on a corrupt log: %v", err)
	}
}

// TestResourceCorruptFenceKeepsTheFloor is issue 11's scenario: a fence at
// token 900 whose record is damaged in place (full length, bad checksum) must
// not be cut off as a torn write, which would let token 5 through again.
func TestResourceCorruptFenceKeepsTheFloor(t *testing.T) {
	dir := t.TempDir()
	rs := startResource(t, dir, false)
	if _, err := rs.client.Put(ctxT(t), "a", "one", 5, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.client.Fence(ctxT(t), 900, "s"); err != nil {
		t.Fatal(err)
	}
	rs.stop()
	path := filepath.Join(dir, resourceLogName)
	data, _ := os.ReadFile(path)
	// Damage the last record (the fence) in place: a byte of its time.
	i := bytes.LastIndex(data, []byte(`"time":"`)) + len(`"time":"`) + 2
	data[i] ^= 0x01
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := NewResource(ResourceConfig{DataDir: dir})
	var ce *CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("NewResource = %v, want a *CorruptError", err)
	}
	if ce.Type != "fence" || ce.Scope != "s" || ce.Token != 900 || ce.DataDir != dir {
		t.Fatalf("CorruptError %+v: want type fence, scope s, token 900", ce)
	}
	for _, want := range []string{"offset", "fence", "900", "coordctl resource repair --data-dir " + dir} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not say %q", err, want)
		}
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, data) {
		t.Fatal("a refused open changed the log")
	}

	// Repair without apply only says what it would do. The damaged fence
	// cannot be trusted: no re-fence from it, a bound is needed.
	plan, err := Repair(dir, RepairOptions{})
	if err != nil || !plan.NeedsRepair() || plan.Applied || !plan.NeedsBound {
		t.Fatalf("Repair(dry run) = %+v, %v", plan, err)
	}
	if len(plan.Dropped) != 1 || plan.Dropped[0].Offset != ce.Offset || plan.Dropped[0].Type != "fence" || plan.Dropped[0].Damaged == "" {
		t.Fatalf("plan drops %+v, want the damaged fence at offset %d", plan.Dropped, ce.Offset)
	}
	if len(plan.Refence) != 0 {
		t.Fatalf("plan re-fences %+v from an untrusted record", plan.Refence)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, data) {
		t.Fatal("a dry-run repair changed the log")
	}
	if plan, err = Repair(dir, RepairOptions{Apply: true, Bound: 1000}); err != nil || !plan.Applied {
		t.Fatalf("Repair(apply) = %+v, %v", plan, err)
	}
	if backup, _ := os.ReadFile(plan.Backup); !bytes.Equal(backup, data) {
		t.Fatal("the backup is not the log as it was")
	}

	// After the repair the floor is the bound, 1000: token 5 is refused.
	rs = startResource(t, dir, false)
	if f := rs.res.Floor("s"); f != 1000 {
		t.Fatalf("floor after repair = %d, want 1000", f)
	}
	if _, err := rs.client.Put(ctxT(t), "a", "late", 5, "s"); !errors.Is(err, ErrStale) {
		t.Fatalf("put with token 5 after repair: %v, want ErrStale", err)
	}
	if plan, err := Repair(dir, RepairOptions{}); !errors.Is(err, ErrDirInUse) {
		t.Fatalf("Repair while the resource is open = %+v, %v; want ErrDirInUse", plan, err)
	}
	rs.stop()
	if plan, err := Repair(dir, RepairOptions{}); err != nil || plan.NeedsRepair() {
		t.Fatalf("Repair of a repaired log = %+v, %v", plan, err)
	}
}

// TestResourceConcurrentIfMatch: N writers increment one counter by
// read-modify-write with If-Match, retrying on 412. No increment is lost.
func TestResourceConcurrentIfMatch(t *testing.T) {
	rs := startResource(t, t.TempDir(), false)
	ctx := ctxT(t)
	const writers, each = 8, 10
	if _, err := rs.client.Put(ctx, "counter", "0", 1, "s", IfMatch(0)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < each; {
				e, err := rs.client.Get(ctx, "counter")
				if err != nil {
					errs <- err
					return
				}
				var n int
				fmt.Sscan(e.Value, &n)
				_, err = rs.client.Put(ctx, "counter", fmt.Sprint(n+1), 1, "s", IfMatch(e.Version))
				switch {
				case err == nil:
					done++
				case errors.Is(err, ErrVersionMismatch):
				default:
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	e, err := rs.client.Get(ctx, "counter")
	if err != nil || e.Value != fmt.Sprint(writers*each) || e.Version != writers*each+1 {
		t.Fatalf("counter %+v %v, want %d", e, err, writers*each)
	}
}

// TestResourceConcurrentTokens: holders with different tokens write
// concurrently. Whatever the interleaving, the accepted writes of the scope
// have non-decreasing tokens, and every request is either applied or counted
// as rejected.
func TestResourceConcurrentTokens(t *testing.T) {
	rs := startResource(t, t.TempDir(), false)
	ctx := ctxT(t)
	const writers, each = 8, 15
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted, rejected := 0, 0
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				tok := Token(1 + (w*7+i*3)%20)
				_, err := rs.client.Put(ctx, fmt.Sprintf("k%d", i%3), fmt.Sprintf("w%d-%d", w, i), tok, "s")
				mu.Lock()
				switch {
				case err == nil:
					accepted++
				case errors.Is(err, ErrStale):
					rejected++
				default:
					t.Errorf("put: %v", err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	l, err := rs.client.Log(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Writes) != accepted || l.Rejected != rejected || accepted+rejected != writers*each {
		t.Fatalf("log has %d writes, %d rejected; clients saw %d accepted, %d rejected", len(l.Writes), l.Rejected, accepted, rejected)
	}
	for i := 1; i < len(l.Writes); i++ {
		if l.Writes[i].Token < l.Writes[i-1].Token || l.Writes[i].Seq != l.Writes[i-1].Seq+1 {
			t.Fatalf("write %d: token %d after %d (seq %d after %d)", i, l.Writes[i].Token, l.Writes[i-1].Token,
				l.Writes[i].Seq, l.Writes[i-1].Seq)
		}
	}
	if l.Floors["s"] != l.Writes[len(l.Writes)-1].Token {
		t.Fatalf("floor %d, last accepted token %d", l.Floors["s"], l.Writes[len(l.Writes)-1].Token)
	}
}

func TestResourceUnfencedAcceptsStaleTokens(t *testing.T) {
	rs := startResource(t, t.TempDir(), true)
	ctx := ctxT(t)
	if _, err := rs.client.Fence(ctx, 10, "s"); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []Token{9, 3, 12, 4} {
		if _, err := rs.client.Put(ctx, "k", "by "+tok.String(), tok, "s"); err != nil {
			t.Fatalf("unfenced put with token %d: %v", tok, err)
		}
	}
	l, err := rs.client.Log(ctx, "s")
	if err != nil || !l.Unfenced || l.Rejected != 0 || len(l.Writes) != 4 || l.Writes[3].Token != 4 {
		t.Fatalf("unfenced log: %+v %v", l, err)
	}
	if e, _ := rs.client.Get(ctx, "k"); e.Value != "by 4" {
		t.Fatalf("the last write wins without fencing: %+v", e)
	}
	// Bad requests are still bad requests.
	if _, err := rs.client.Put(ctx, "k", "v", 0, "s"); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("token 0 unfenced: %v", err)
	}
}

func TestResourceNeedsDataDir(t *testing.T) {
	if _, err := NewResource(ResourceConfig{}); err == nil {
		t.Fatal("NewResource without DataDir succeeded")
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	if _, err := NewResource(ResourceConfig{DataDir: file}); err == nil {
		t.Fatal("NewResource on a file succeeded")
	}
	// A nested directory that does not exist yet is created.
	nested := filepath.Join(t.TempDir(), "a", "b")
	r, err := NewResource(ResourceConfig{DataDir: nested})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
}

// TestResourceFailedWriteIsNotAcknowledged: when the log cannot be written,
// the write is answered 500, not applied, and the resource stops accepting
// writes (a failed fsync leaves the file's state unknown) until reopened.
func TestResourceFailedWriteIsNotAcknowledged(t *testing.T) {
	dir := t.TempDir()
	rs := startResource(t, dir, false)
	ctx := ctxT(t)
	if _, err := rs.client.Put(ctx, "k", "v1", 5, "s"); err != nil {
		t.Fatal(err)
	}
	rs.res.mu.Lock()
	rs.res.log.f.Close() // the disk goes away under the log
	rs.res.mu.Unlock()
	var ae *APIError
	for _, tok := range []Token{9, 10} {
		if _, err := rs.client.Put(ctx, "k", "v2", tok, "s"); !errors.As(err, &ae) || ae.StatusCode != 500 {
			t.Fatalf("put on a broken log: %v", err)
		}
	}
	if _, err := rs.client.Fence(ctx, 11, "s"); !errors.As(err, &ae) || ae.StatusCode != 500 {
		t.Fatalf("fence on a broken log: %v", err)
	}
	if e, err := rs.client.Get(ctx, "k"); err != nil || e.Value != "v1" || rs.res.Floor("s") != 5 {
		t.Fatalf("a failed write was applied: %+v %v floor %d", e, err, rs.res.Floor("s"))
	}
	rs.stop()
	rs = startResource(t, dir, false)
	if e, err := rs.client.Get(ctx, "k"); err != nil || e.Value != "v1" || rs.res.Floor("s") != 5 {
		t.Fatalf("after reopen: %+v %v floor %d", e, err, rs.res.Floor("s"))
	}
}
