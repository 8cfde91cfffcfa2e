package labweb

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coordkit/coordkit/internal/httpguard"
	"github.com/coordkit/coordkit/internal/httpserve"
)

//go:embed static
var static embed.FS

// maxLine bounds a command's JSON body.
const maxLine = 64 << 10

// MinTokenLen is the shortest token NewServer accepts, in bytes.
const MinTokenLen = 16

// ServerConfig says where to listen and who may talk.
type ServerConfig struct {
	// Addr is host:port; port 0 picks one (see Server.URL).
	Addr string
	// Token, if not empty, is required on every request: as the query
	// parameter token (the page's own requests carry it) or as
	// "Authorization: Bearer TOKEN". A non-loopback Addr requires one.
	Token string
}

// Server serves the page and the API of one Lab.
type Server struct {
	lab  *Lab
	cfg  ServerConfig
	ln   net.Listener
	srv  *httpserve.Server
	quit chan struct{}
}

// NewServer listens on cfg.Addr. It returns ErrTokenRequired for a
// non-loopback address without a token, or the listener's error.
func NewServer(lab *Lab, cfg ServerConfig) (*Server, error) {
	if err := httpguard.CheckListen(cfg.Addr, cfg.Token != ""); err != nil {
		if errors.Is(err, httpguard.ErrTokenRequired) {
			return nil, fmt.Errorf("%w: %s", ErrTokenRequired, cfg.Addr)
		}
		return nil, fmt.Errorf("labweb: %w", err)
	}
	if cfg.Token != "" && len(cfg.Token) < MinTokenLen {
		return nil, fmt.Errorf("%w: %d bytes", ErrTokenShort, len(cfg.Token))
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("labweb: %w", err)
	}
	s := &Server{lab: lab, cfg: cfg, ln: ln, quit: make(chan struct{})}
	s.srv = httpserve.Start(ln, s.Handler())
	return s, nil
}

// URL is the page's address, e.g. http://127.0.0.1:7071/.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() + "/" }

// OpenURL is an address a browser can open, token included: a server on
// every interface (0.0.0.0, ::) is named by host (this machine's name,
// for other machines; "" means 127.0.0.1), as the bare listener address
// cannot be opened.
func (s *Server) OpenURL(host string) string {
	h, port, err := net.SplitHostPort(s.ln.Addr().String())
	if err != nil {
		return s.URL()
	}
	if ip := net.ParseIP(h); ip != nil && ip.IsUnspecified() {
		h = host
		if h == "" {
			h = "127.0.0.1"
		}
	}
	u := "http://" + net.JoinHostPort(h, port) + "/"
	if s.cfg.Token != "" {
		u += "?token=" + url.QueryEscape(s.cfg.Token)
	}
	return u
}

// Close ends open event streams and stops the server, letting commands
// in flight finish for up to five seconds: it returns that deadline's
// error when one was cut short, and the error that stopped serving early
// if one did.
func (s *Server) Close() error {
	close(s.quit)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	select {
	case serveErr := <-s.srv.Failed():
		err = errors.Join(err, fmt.Errorf("labweb: %w", serveErr))
	default:
	}
	return err
}

// Handler is the page and the API:
//
//	GET  /                 the page (and its script and style)
//	GET  /api/state        State as JSON
//	GET  /api/events       Server-Sent Events (id: sequence number)
//	POST /api/command      {"line":"…"} → the shell's JSON result
//	GET  /api/export/NAME  a file a history or timeline command wrote
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	sub, _ := fs.Sub(static, "static")
	mux.Handle("GET /", http.FileServerFS(sub))
	mux.HandleFunc("GET /api/state", s.state)
	mux.HandleFunc("GET /api/events", s.events)
	mux.HandleFunc("POST /api/command", s.command)
	mux.HandleFunc("GET /api/export/{name}", s.export)
	return s.guard(mux)
}

// guard checks the token, and without one that the Host header names a
// loopback host (a page of another site cannot reach the lab through DNS
// rebinding): httpguard's one check.
func (s *Server) guard(next http.Handler) http.Handler {
	return httpguard.Guard{Secret: httpguard.NewSecret(s.cfg.Token), Name: "labweb"}.Wrap(next, httpError)
}

func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": msg})
}

func (s *Server) state(w http.ResponseWriter, r *http.Request) {
	b, _, err := s.lab.hub.State()
	if err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
}

// CommandRequest is POST /api/command's body.
type CommandRequest struct {
	Line string `json:"line"`
}

// command runs one line. 200 with the shell's JSON result (a command that
// ran and failed, like a write without quorum, has "ok":false); 400 with
// the same shape for a line that does not parse or the page may not send;
// 415 without a JSON content type (a cross-site form cannot send one).
// The X-Lab-Seq header names the command's event in the stream; X-Lab-Ms
// says how long the command ran (milliseconds).
func (s *Server) command(w http.ResponseWriter, r *http.Request) {
	if !httpguard.JSONBody(r) {
		httpError(w, http.StatusUnsupportedMediaType, "labweb: POST /api/command wants Content-Type: application/json")
		return
	}
	var req CommandRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxLine))
	err := dec.Decode(&req)
	if err == nil {
		// One JSON object and nothing after it: trailing bytes are a
		// client bug, not a second command.
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("trailing data after the JSON object")
		}
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("labweb: body over the %d KiB limit", maxLine>>10))
		return
	case err != nil:
		httpError(w, http.StatusBadRequest, "labweb: body: "+err.Error())
		return
	}
	start := time.Now()
	out, seq, err := s.lab.Run(r.Context(), SourceWeb, req.Line)
	ran := time.Since(start)
	b, merr := json.Marshal(out)
	if merr != nil {
		httpError(w, http.StatusInternalServerError, merr.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if seq != 0 {
		w.Header().Set("X-Lab-Seq", strconv.FormatUint(seq, 10))
		w.Header().Set("X-Lab-Ms", strconv.FormatFloat(ms(ran), 'f', 3, 64))
	}
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
	}
	_, _ = w.Write(b)
}

func (s *Server) export(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	p := s.lab.ExportPath(name)
	if p == "" {
		httpError(w, http.StatusBadRequest, "labweb: bad file name")
		return
	}
	if strings.HasSuffix(name, ".json") {
		w.Header().Set("Content-Disposition", "attachment; filename="+strconv.Quote(name))
	}
	http.ServeFile(w, r, p)
}

// heartbeat keeps idle streams (and proxies) from timing out.
const heartbeat = 15 * time.Second

// events streams the hub. A reader sending Last-Event-ID (or ?last=N)
// gets every event after N, or a state event first when the ring no
// longer holds them; a new reader starts with a state event.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		httpError(w, http.StatusInternalServerError, "labweb: streaming unsupported")
		return
	}
	last, fresh := uint64(0), true
	id := r.Header.Get("Last-Event-ID")
	if id == "" {
		id = r.URL.Query().Get("last")
	}
	if id != "" {
		n, err := strconv.ParseUint(id, 10, 64)
		if err != nil {
			httpError(w, http.StatusBadRequest, "labweb: bad Last-Event-ID "+strconv.Quote(id))
			return
		}
		last, fresh = n, false
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 1000\n\n")
	fl.Flush()
	hb := time.NewTicker(heartbeat)
	defer hb.Stop()
	for {
		evs, wait, err := s.lab.hub.read(last, fresh)
		if err != nil {
			return
		}
		fresh = false
		for _, e := range evs {
			if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Type, e.Data); err != nil {
				return
			}
			last = e.Seq
		}
		if len(evs) > 0 {
			fl.Flush()
		}
		select {
		case <-r.Context().Done():
			return
		case <-s.quit:
			return
		case <-hb.C:
			if _, err := fmt.Fprint(w, ": keepalive\n\n"); err != nil {
				return
			}
			fl.Flush()
		case <-wait:
		}
	}
}
