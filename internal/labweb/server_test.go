package labweb

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/cluster"
	"github.com/coordkit/coordkit/cluster/labcmd"
)

// client talks to the server without any proxy from the environment.
var client = &http.Client{Transport: &http.Transport{Proxy: nil}}

type sse struct {
	ID   uint64
	Type string
	Data string
}

// stream is an open GET /api/events.
type stream struct {
	body io.Closer
	ch   chan sse
	done chan struct{}
}

func openStream(t *testing.T, url string, lastID string) *stream {
	t.Helper()
	req, err := http.NewRequest("GET", url+"api/events", nil)
	require.NoError(t, err)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	s := &stream{body: resp.Body, ch: make(chan sse, 1024), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer close(s.ch)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var cur sse
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if cur.Type != "" {
					s.ch <- cur
				}
				cur = sse{}
			case strings.HasPrefix(line, "id: "):
				cur.ID, _ = strconv.ParseUint(line[4:], 10, 64)
			case strings.HasPrefix(line, "event: "):
				cur.Type = line[7:]
			case strings.HasPrefix(line, "data: "):
				cur.Data = line[6:]
			}
		}
	}()
	return s
}

func (s *stream) close() {
	s.body.Close()
	<-s.done
}

// next returns the next event; the test fails if the stream ends.
func (s *stream) next(t *testing.T) sse {
	t.Helper()
	e, ok := <-s.ch
	require.True(t, ok, "stream ended")
	return e
}

// until reads events until one satisfies f, returning all read.
func (s *stream) until(t *testing.T, f func(sse) bool) []sse {
	t.Helper()
	var out []sse
	for {
		e := s.next(t)
		out = append(out, e)
		if f(e) {
			return out
		}
	}
}

func post(t *testing.T, url, line string) (int, map[string]any, uint64) {
	t.Helper()
	body, _ := json.Marshal(CommandRequest{Line: line})
	resp, err := client.Post(url+"api/command", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var m map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
	seq, _ := strconv.ParseUint(resp.Header.Get("X-Lab-Seq"), 10, 64)
	return resp.StatusCode, m, seq
}

func commandLine(t *testing.T, e sse) string {
	t.Helper()
	var ce CommandEvent
	require.NoError(t, json.Unmarshal([]byte(e.Data), &ce))
	return ce.Line
}

// A reader that disconnects and reconnects with Last-Event-ID gets every
// event it missed, in order, and nothing twice.
func TestEventsReplayAfterReconnect(t *testing.T) {
	_, srv := startLab(t, 3, Options{}, ServerConfig{})
	url := srv.URL()

	s := openStream(t, url, "")
	first := s.next(t)
	require.Equal(t, TypeState, first.Type)
	var st State
	require.NoError(t, json.Unmarshal([]byte(first.Data), &st))
	require.Equal(t, first.ID, st.Seq)
	require.Equal(t, 3, st.Nodes)
	code, _, seq := post(t, url, "put a 1")
	require.Equal(t, http.StatusOK, code)
	seen := s.until(t, func(e sse) bool { return e.ID == seq })
	last := seen[len(seen)-1]
	require.Equal(t, TypeCommand, last.Type)
	require.Equal(t, "put a 1", commandLine(t, last))
	s.close()

	// While nobody listens.
	lines := []string{"cut 1 2", "put b 2", "heal", "leader", "put c 3"}
	var seqs []uint64
	for _, l := range lines {
		code, m, seq := post(t, url, l)
		require.Equal(t, http.StatusOK, code, "%s: %v", l, m)
		seqs = append(seqs, seq)
	}

	s = openStream(t, url, strconv.FormatUint(last.ID, 10))
	defer s.close()
	got := s.until(t, func(e sse) bool { return e.ID == seqs[len(seqs)-1] })
	var cmds []string
	for i, e := range got {
		require.Equal(t, last.ID+uint64(i)+1, e.ID, "events in order, none lost, none repeated")
		require.NotEqual(t, TypeState, e.Type, "the ring still held them all")
		if e.Type == TypeCommand {
			cmds = append(cmds, commandLine(t, e))
		}
	}
	require.Equal(t, lines, cmds)
}

// A reader further behind than the ring gets a full state first, then
// every event after it.
func TestEventsReplayBeyondTheRing(t *testing.T) {
	_, srv := startLab(t, 3, Options{RingSize: 4}, ServerConfig{})
	url := srv.URL()
	var seq uint64
	for i := 0; i < 10; i++ {
		_, _, seq = post(t, url, fmt.Sprintf("put k%d %d", i, i))
	}
	s := openStream(t, url, "1")
	defer s.close()
	first := s.next(t)
	require.Equal(t, TypeState, first.Type)
	var st State
	require.NoError(t, json.Unmarshal([]byte(first.Data), &st))
	require.Equal(t, first.ID, st.Seq)
	require.GreaterOrEqual(t, st.Seq, seq)
	require.Equal(t, "put k9 9", st.Commands[len(st.Commands)-1].Line)
	code, _, seq2 := post(t, url, "put after 1")
	require.Equal(t, http.StatusOK, code)
	got := s.until(t, func(e sse) bool { return e.ID == seq2 })
	for i, e := range got {
		require.Equal(t, first.ID+uint64(i)+1, e.ID)
	}
}

// A line that does not parse, or that the page may not send, is a 400
// with the shell's error, and changes nothing.
func TestBadCommandsChangeNothing(t *testing.T) {
	lab, srv := startLab(t, 3, Options{}, ServerConfig{})
	url := srv.URL()
	links := func() []cluster.LinkConfig {
		var out []cluster.LinkConfig
		for _, li := range lab.Cluster().Links() {
			out = append(out, li.LinkConfig)
		}
		return out
	}
	before := links()
	hist := len(lab.Cluster().History())
	tests := []struct{ line, want string }{
		{"frobnicate 1", `unknown command "frobnicate" (try help)`},
		{"cut 1", "usage: cut N M [--both]"},
		{"partition", "usage: partition A|B[|C], e.g. partition 1,2|3,4,5"},
		{"put x", "usage: put K V [--via N]"},
		{"get x --mode bogus", `cluster: unknown read mode "bogus"`},
		{"crash one", `usage: bad node "one"`},
		{"load fast", "usage: load R[/s] | load off | load"},
		{"exit", "exit ends the lab from its shell"},
		{"history /tmp/h.json", "takes a bare file name"},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			code, m, _ := post(t, url, tt.line)
			require.Equal(t, http.StatusBadRequest, code)
			require.Equal(t, false, m["ok"])
			require.Contains(t, m["error"], tt.want)
		})
	}
	require.Equal(t, before, links())
	require.Equal(t, hist, len(lab.Cluster().History()))
	require.False(t, lab.sess.Load().Running)

	// A command that runs and fails is the shell's "ok":false, not a 400.
	code, m, _ := post(t, url, "crash 9")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, false, m["ok"])
	require.Contains(t, m["error"], "unknown node: 9")

	// Not JSON: a cross-site form cannot post here.
	resp, err := client.Post(url+"api/command", "text/plain", strings.NewReader(`{"line":"crash 1"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode)
	for _, ns := range lab.Cluster().Status().Nodes {
		require.True(t, ns.Up)
	}
}

// Two clients sending commands at once: every command runs once, each
// answered, each in the stream once. Whether a put commits is the
// cluster's answer, not the page's: on a starved machine the leader can
// miss its heartbeats and lose its lease mid-write ("leadership lost
// before commit", outcome unknown), so the test counts each put's one
// answer and one history record, whatever its outcome.
func TestConcurrentCommandsFromTwoClients(t *testing.T) {
	lab, srv := startLab(t, 3, Options{}, ServerConfig{})
	url := srv.URL()
	s := openStream(t, url, "")
	defer s.close()
	const per = 15
	var wg sync.WaitGroup
	seqs := make([][]uint64, 2)
	for c := 0; c < 2; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				body, _ := json.Marshal(CommandRequest{Line: fmt.Sprintf("put c%d-%d %d", c, i, i)})
				resp, err := client.Post(url+"api/command", "application/json", bytes.NewReader(body))
				if err != nil {
					t.Error(err)
					return
				}
				var m map[string]any
				err = json.NewDecoder(resp.Body).Decode(&m)
				resp.Body.Close()
				// 200: the command ran (its "ok" is the cluster's outcome).
				if err != nil || resp.StatusCode != http.StatusOK || m["cmd"] != "put" {
					t.Errorf("client %d: %d %v %v", c, resp.StatusCode, m, err)
					return
				}
				if m["ok"] != true {
					t.Logf("client %d: the put ran and did not commit: %v", c, m["error"])
				}
				seq, _ := strconv.ParseUint(resp.Header.Get("X-Lab-Seq"), 10, 64)
				seqs[c] = append(seqs[c], seq)
			}
		}()
	}
	wg.Wait()
	require.False(t, t.Failed())
	want := map[uint64]bool{}
	for _, ss := range seqs {
		for _, q := range ss {
			require.False(t, want[q], "seq %d given twice", q)
			want[q] = true
		}
	}
	// Each command comes once, as its own event, or inside a state event
	// when the reader fell further behind than the ring holds (a loaded
	// machine's snapshots can fill it): that stands for the events it
	// replaced, and carries the last commands.
	lines := map[string]int{}
	for len(want) > 0 {
		e := s.next(t)
		switch e.Type {
		case TypeCommand:
			lines[commandLine(t, e)]++
			delete(want, e.ID)
		case TypeState:
			var st State
			require.NoError(t, json.Unmarshal([]byte(e.Data), &st))
			for _, c := range st.Commands {
				if _, seen := lines[c.Line]; !seen {
					lines[c.Line] = 1
				}
			}
			for q := range want {
				if q <= e.ID {
					delete(want, q)
				}
			}
		}
	}
	require.Len(t, lines, 2*per)
	for l, n := range lines {
		require.Equal(t, 1, n, l)
	}
	// Each ran once: one record per put in the history, whatever its
	// outcome (the client retries a put inside one operation, never as a
	// second one).
	puts := map[string]int{}
	for _, r := range lab.Cluster().History() {
		if r.Op == "put" {
			puts[r.Key]++
		}
	}
	require.Len(t, puts, 2*per)
	for k, n := range puts {
		require.Equal(t, 1, n, k)
	}
}

func TestTokenOffLoopback(t *testing.T) {
	ctxLab, _ := startLab(t, 1, Options{}, ServerConfig{})
	_, err := NewServer(ctxLab, ServerConfig{Addr: "0.0.0.0:0"})
	require.True(t, errors.Is(err, ErrTokenRequired), "%v", err)

	srv, err := NewServer(ctxLab, ServerConfig{Addr: "0.0.0.0:0", Token: "s3cret-s3cret-s3cret"})
	require.NoError(t, err)
	defer func() { require.NoError(t, srv.Close()) }()
	port := srv.ln.Addr().String()[strings.LastIndex(srv.ln.Addr().String(), ":"):]
	base := "http://127.0.0.1" + port
	get := func(path, auth string) int {
		req, _ := http.NewRequest("GET", base+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, p := range []string{"/", "/api/state", "/api/events", "/lab.js"} {
		require.Equal(t, http.StatusUnauthorized, get(p, ""), p)
		require.Equal(t, http.StatusUnauthorized, get(p+"?token=wrong", ""), p)
	}
	require.Equal(t, http.StatusOK, get("/api/state?token=s3cret-s3cret-s3cret", ""))
	require.Equal(t, http.StatusOK, get("/api/state", "Bearer s3cret-s3cret-s3cret"))
	require.Equal(t, http.StatusOK, get("/?token=s3cret-s3cret-s3cret", ""))
	resp, err := client.Post(base+"/api/command", "application/json", strings.NewReader(`{"line":"crash 1"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.True(t, ctxLab.Cluster().Status().Nodes[0].Up)
}

// Without a token, a request naming a host other than a loopback one (a
// DNS-rebinding page) is refused.
func TestLoopbackHostCheck(t *testing.T) {
	_, srv := startLab(t, 1, Options{}, ServerConfig{})
	req, _ := http.NewRequest("GET", srv.URL()+"api/state", nil)
	req.Host = "evil.example:80"
	resp, err := client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
}

func TestExportFromThePage(t *testing.T) {
	_, srv := startLab(t, 3, Options{}, ServerConfig{})
	url := srv.URL()
	code, m, _ := post(t, url, "put x 1")
	require.Equal(t, http.StatusOK, code, m)
	for _, name := range []string{"h.json", "h.html"} {
		code, m, _ = post(t, url, "history "+name)
		require.Equal(t, http.StatusOK, code, m)
		require.Equal(t, true, m["ok"], m)
		resp, err := client.Get(url + "api/export/" + name)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		if name == "h.json" {
			var recs []map[string]any
			require.NoError(t, json.Unmarshal(b, &recs))
			require.Len(t, recs, 1)
		} else {
			require.Contains(t, string(b), "<html")
		}
	}
	resp, err := client.Get(url + "api/export/missing.json")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// The write load's figures reach the stream while it runs.
func TestLoadFiguresStream(t *testing.T) {
	_, srv := startLab(t, 3, Options{LoadInterval: 20 * time.Millisecond}, ServerConfig{})
	url := srv.URL()
	s := openStream(t, url, "")
	defer s.close()
	code, m, _ := post(t, url, "load 300/s")
	require.Equal(t, http.StatusOK, code, m)
	s.until(t, func(e sse) bool {
		if e.Type != TypeLoad {
			return false
		}
		var le LoadEvent
		require.NoError(t, json.Unmarshal([]byte(e.Data), &le))
		return le.Running && le.WritesPerS > 0
	})
	code, m, _ = post(t, url, "load off")
	require.Equal(t, http.StatusOK, code, m)
	require.Equal(t, false, m["running"])
}

// The shell sees the page's commands (Echo), not its own again.
func TestEchoOfPageCommands(t *testing.T) {
	var mu sync.Mutex
	var echoed []string
	lab, srv := startLab(t, 1, Options{Echo: func(ev CommandEvent, _ labcmd.Output) {
		mu.Lock()
		echoed = append(echoed, ev.Source+": "+ev.Line)
		mu.Unlock()
	}}, ServerConfig{})
	code, _, _ := post(t, srv.URL(), "leader")
	require.Equal(t, http.StatusOK, code)
	code, _, _ = post(t, srv.URL(), "frob")
	require.Equal(t, http.StatusBadRequest, code)
	_, _, err := lab.Run(t.Context(), SourceShell, "leader")
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"web: leader", "web: frob"}, echoed)
}

// A connection that never sends a request (a browser's speculative
// connection, or the spare one Go's client dials when two requests race
// for a connection) has nothing to finish: Close does not wait for it.
// net/http's Shutdown counts such a connection busy for its first five
// seconds (golang/go#22682), which made Close fail with "context deadline
// exceeded" after a run whose client had dialed one spare.
func TestCloseDoesNotWaitForAConnectionWithoutARequest(t *testing.T) {
	lab, err := New(startCluster(t, 1), Options{})
	require.NoError(t, err)
	defer lab.Close()
	srv, err := NewServer(lab, ServerConfig{Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	idle, err := net.Dial("tcp", srv.ln.Addr().String())
	require.NoError(t, err)
	defer idle.Close()
	// The server has accepted it once a request on another connection is
	// answered: the listener hands connections out in order.
	resp, err := client.Get(srv.URL() + "api/state")
	require.NoError(t, err)
	resp.Body.Close()
	require.NoError(t, srv.Close())
	// The server closed it: a read ends instead of blocking.
	require.NoError(t, idle.SetReadDeadline(time.Now().Add(time.Minute)))
	_, err = idle.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF)
}
