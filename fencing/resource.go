package fencing

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// HTTP headers of the protected-resource API.
const (
	HeaderToken          = "Fencing-Token"
	HeaderScope          = "Fencing-Scope"
	HeaderIfMatch        = "If-Match"
	HeaderIdempotencyKey = "Idempotency-Key"
	// HeaderReplayed is set to "true" on a response repeated for an Idempotency-Key.
	HeaderReplayed = "Idempotent-Replayed"
)

// Limits of the protected resource, in bytes.
const (
	MaxValueSize         = 1 << 20 // of a PUT body
	MaxKeyLen            = 1024
	MaxIdempotencyKeyLen = 256
)

const (
	resourceLogName  = "resource.log"
	resourceLockName = "LOCK"
	// Error messages the client recognizes.
	errStaleFencingToken = "stale fencing token"
	errIdempotencyReused = "idempotency key reused with a different request"
)

// Clock tells the time; the Resource stamps writes with it. It is not
// session.Clock because fencing imports nothing from this module (a
// session.Clock satisfies it: the Resource needs Now alone).
type Clock interface {
	Now() time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// ResourceConfig configures NewResource.
type ResourceConfig struct {
	// DataDir holds the resource's log; created if missing. Required.
	DataDir string
	// Logger receives rejections and recovery notes; nil discards them.
	Logger *slog.Logger
	// Unfenced turns off the token check: every write is accepted and its
	// token only recorded. It is the "lock without fencing" baseline.
	Unfenced bool
	// Clock stamps writes; nil means the system clock.
	Clock Clock
}

// PutResult is the answer to an accepted PUT.
type PutResult struct {
	Key     string `json:"key"`
	Token   Token  `json:"token"`
	Scope   string `json:"scope"`
	Seq     uint64 `json:"seq"`
	Version uint64 `json:"version"`
}

// Entry is the current state of a key.
type Entry struct {
	Key     string `json:"key"`
	Value   string `json:"value"`
	Token   Token  `json:"token"`
	Scope   string `json:"scope"`
	Version uint64 `json:"version"`
}

// FenceResult is the answer to an accepted fence: the scope's floor after it.
type FenceResult struct {
	Scope string `json:"scope"`
	Token Token  `json:"token"`
	Floor Token  `json:"floor"`
}

// Write is one accepted write, as the audit log shows it.
type Write struct {
	Seq     uint64    `json:"seq"`
	Key     string    `json:"key"`
	Token   Token     `json:"token"`
	Scope   string    `json:"scope"`
	Value   string    `json:"value"`
	Version uint64    `json:"version"`
	Time    time.Time `json:"time,omitzero"`
}

// LogResult is the audit log: accepted writes in the order they were
// applied, and how many stale requests (writes and fences) were rejected.
type LogResult struct {
	Writes   []Write          `json:"writes"`
	Rejected int              `json:"rejected"`
	Floors   map[string]Token `json:"floors"`
	Unfenced bool             `json:"unfenced"`
}

// errorBody is the JSON of every error answer.
type errorBody struct {
	Error   string  `json:"error"`
	Scope   string  `json:"scope,omitempty"`
	Token   Token   `json:"token,omitempty"`
	Floor   Token   `json:"floor,omitempty"`
	Key     string  `json:"key,omitempty"`
	Version *uint64 `json:"version,omitempty"`
}

// Types of the resource's log records. recordFenceAll raises the floor of
// every scope (Guard.RaiseAll) and has an empty scope, which no other record
// may have, so a binary that predates it refuses the log as corrupt instead
// of ignoring the record and lowering floors.
const (
	recordWrite    = "write"
	recordFence    = "fence"
	recordReject   = "reject"
	recordFenceAll = "fence-all"
)

// resourceRecord is one record of the resource's log.
type resourceRecord struct {
	Type    string    `json:"t"` // recordWrite, recordFence, recordReject or recordFenceAll
	Seq     uint64    `json:"seq,omitempty"`
	Key     string    `json:"key,omitempty"`
	Value   string    `json:"value,omitempty"`
	Token   Token     `json:"token"`
	Scope   string    `json:"scope"`
	Version uint64    `json:"version,omitempty"`
	IdemKey string    `json:"idem_key,omitempty"`
	IdemSum string    `json:"idem_sum,omitempty"`
	Time    time.Time `json:"time,omitzero"`
}

type idemRecord struct {
	sum string
	seq uint64
}

// Resource is the protected resource: a small durable key-value store that
// checks fencing tokens (see the package doc for its HTTP API). Every
// acknowledged write or fence is fsynced first. Requests are serialized.
type Resource struct {
	cfg    ResourceConfig
	logger *slog.Logger
	clock  Clock
	mux    *http.ServeMux

	mu       sync.Mutex
	log      *logFile // nil once closed
	lock     *fileLock
	guard    Guard
	kv       map[string]Entry
	writes   []Write
	idem     map[string]idemRecord
	rejected map[string]int
}

var _ http.Handler = (*Resource)(nil)

// NewResource opens (or creates) the resource in cfg.DataDir and replays its
// log. A torn final record (its length runs past the end of the file) is cut
// off; any other damaged record is a *CorruptError (ErrCorrupt) naming the
// way to proceed (Repair). ErrDirInUse: another process has the directory.
func NewResource(cfg ResourceConfig) (*Resource, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("fencing: ResourceConfig.DataDir is empty")
	}
	r := &Resource{
		cfg:      cfg,
		logger:   cfg.Logger,
		clock:    cfg.Clock,
		kv:       map[string]Entry{},
		idem:     map[string]idemRecord{},
		rejected: map[string]int{},
	}
	if r.logger == nil {
		r.logger = slog.New(slog.DiscardHandler)
	}
	if r.clock == nil {
		r.clock = systemClock{}
	}
	if err := mkdirDurable(cfg.DataDir); err != nil {
		return nil, err
	}
	lock, err := lockFile(filepath.Join(cfg.DataDir, resourceLockName))
	if err != nil {
		return nil, err
	}
	path := filepath.Join(cfg.DataDir, resourceLogName)
	l, info, err := openLog(path, r.replay)
	if err != nil {
		lock.release()
		var ce *CorruptError
		if errors.As(err, &ce) {
			ce.DataDir = cfg.DataDir
		}
		return nil, err
	}
	if info.Truncated > 0 {
		r.logger.Warn("cut off a torn final record (crash during a write that was never acknowledged)",
			"log", path, "bytes", info.Truncated)
	}
	r.log, r.lock = l, lock
	r.logger.Info("resource open", "data_dir", cfg.DataDir, "writes", len(r.writes),
		"scopes", len(r.guard.Floors()), "unfenced", cfg.Unfenced)

	r.mux = http.NewServeMux()
	r.mux.HandleFunc("POST /v1/fence", r.handleFence)
	r.mux.HandleFunc("GET /v1/log", r.handleLog)
	r.mux.HandleFunc("GET /v1/floors", r.handleFloors)
	for path, allow := range map[string]string{"/v1/fence": "POST", "/v1/log": "GET, HEAD", "/v1/floors": "GET, HEAD"} {
		r.mux.HandleFunc(path, func(w http.ResponseWriter, req *http.Request) {
			w.Header().Set("Allow", allow)
			writeJSON(w, http.StatusMethodNotAllowed, errorBody{Error: "method " + req.Method + " not allowed on " + path})
		})
	}
	r.mux.HandleFunc("/", func(w http.ResponseWriter, req *http.Request) {
		writeJSON(w, http.StatusNotFound, errorBody{Error: "no such endpoint: " + req.Method + " " + req.URL.Path})
	})
	return r, nil
}

// mkdirDurable creates dir (and parents) and fsyncs the parent of each
// directory it created, so the directory survives a crash.
func mkdirDurable(dir string) error {
	dir = filepath.Clean(dir)
	if st, err := os.Stat(dir); err == nil {
		if !st.IsDir() {
			return fmt.Errorf("fencing: %s is not a directory", dir)
		}
		return nil
	}
	if err := mkdirDurable(filepath.Dir(dir)); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
		return err
	}
	return syncDir(filepath.Dir(dir))
}

func (r *Resource) replay(p []byte) error {
	var rec resourceRecord
	if err := json.Unmarshal(p, &rec); err != nil {
		return err
	}
	if rec.Type == recordFenceAll {
		if err := checkAllArgs(rec.Scope, rec.Token); err != nil {
			return err
		}
		r.guard.RaiseAll(rec.Token)
		return nil
	}
	if err := checkArgs(rec.Scope, rec.Token); err != nil {
		return err
	}
	switch rec.Type {
	case recordWrite:
		if rec.Seq != uint64(len(r.writes))+1 {
			return fmt.Errorf("write seq %d out of order (want %d)", rec.Seq, len(r.writes)+1)
		}
		r.applyWrite(rec)
	case recordFence:
		r.guard.Apply(Admission{Scope: rec.Scope, Token: rec.Token})
	case recordReject:
		r.rejected[rec.Scope]++
	default:
		return fmt.Errorf("unknown record type %q", rec.Type)
	}
	return nil
}

func (r *Resource) applyWrite(rec resourceRecord) {
	r.guard.Apply(Admission{Scope: rec.Scope, Token: rec.Token})
	r.kv[rec.Key] = Entry{Key: rec.Key, Value: rec.Value, Token: rec.Token, Scope: rec.Scope, Version: rec.Version}
	r.writes = append(r.writes, Write{Seq: rec.Seq, Key: rec.Key, Token: rec.Token, Scope: rec.Scope,
		Value: rec.Value, Version: rec.Version, Time: rec.Time})
	if rec.IdemKey != "" {
		r.idem[rec.IdemKey] = idemRecord{sum: rec.IdemSum, seq: rec.Seq}
	}
}

// ServeHTTP serves the resource's HTTP API.
func (r *Resource) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	// Keys are routed by hand: ServeMux cleans paths, which would redirect
	// keys such as "a//b" or "..".
	if rest, ok := strings.CutPrefix(req.URL.EscapedPath(), kvPrefix); ok {
		key, err := url.PathUnescape(rest)
		if err != nil {
			badRequest(w, "bad key %q: %v", rest, err)
			return
		}
		switch req.Method {
		case http.MethodPut:
			r.handlePut(w, req, key)
		case http.MethodGet, http.MethodHead:
			r.handleGet(w, key)
		default:
			w.Header().Set("Allow", "GET, HEAD, PUT")
			writeJSON(w, http.StatusMethodNotAllowed, errorBody{Error: "method " + req.Method + " not allowed on " + kvPrefix + "{key}"})
		}
		return
	}
	r.mux.ServeHTTP(w, req)
}

const kvPrefix = "/v1/kv/"

// Floor returns the floor of scope.
func (r *Resource) Floor(scope string) Token { return r.guard.Floor(scope) }

// Close closes the log and releases the data directory. Requests after
// Close are answered 503. Every acknowledged write is already durable.
func (r *Resource) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.log == nil {
		return nil
	}
	err := r.log.sync() // rejection counts are appended without fsync
	if cerr := r.log.close(); err == nil {
		err = cerr
	}
	r.log = nil
	if lerr := r.lock.release(); err == nil {
		err = lerr
	}
	return err
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func badRequest(w http.ResponseWriter, format string, args ...any) {
	writeJSON(w, http.StatusBadRequest, errorBody{Error: fmt.Sprintf(format, args...)})
}

// parseFencing reads the Fencing-Token and Fencing-Scope headers.
func parseFencing(req *http.Request) (Token, string, error) {
	vals := req.Header.Values(HeaderToken)
	if len(vals) == 0 {
		return 0, "", fmt.Errorf("missing %s header", HeaderToken)
	}
	if len(vals) > 1 {
		return 0, "", fmt.Errorf("more than one %s header", HeaderToken)
	}
	tok, err := ParseToken(vals[0])
	if err != nil {
		return 0, "", fmt.Errorf("bad %s header: %v", HeaderToken, err)
	}
	if len(req.Header.Values(HeaderScope)) > 1 {
		return 0, "", fmt.Errorf("more than one %s header", HeaderScope)
	}
	scope := req.Header.Get(HeaderScope)
	if scope == "" {
		return 0, "", fmt.Errorf("missing %s header", HeaderScope)
	}
	if err := ValidateScope(scope); err != nil {
		return 0, "", fmt.Errorf("bad %s header: %v", HeaderScope, err)
	}
	return tok, scope, nil
}

// parseIfMatch reads If-Match: a version number, optionally quoted like an
// ETag; "0" means the key must not exist yet, "*" that it must exist.
func parseIfMatch(s string) (version uint64, any bool, err error) {
	s = strings.TrimSpace(s)
	if s == "*" {
		return 0, true, nil
	}
	s = strings.TrimPrefix(s, "W/")
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	if s == "" || strings.ContainsAny(s, "+- ") {
		return 0, false, fmt.Errorf("bad %s header %q: want a version number", HeaderIfMatch, s)
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("bad %s header %q: want a version number", HeaderIfMatch, s)
	}
	return v, false, nil
}

func validateKey(key string) error {
	switch {
	case key == "":
		return errors.New("empty key")
	case len(key) > MaxKeyLen:
		return fmt.Errorf("key longer than %d bytes", MaxKeyLen)
	case !utf8.ValidString(key):
		return errors.New("key is not UTF-8")
	}
	return nil
}

func fingerprint(key, scope string, tok Token, ifMatch, value string) string {
	h := sha256.New()
	for _, s := range []string{key, scope, tok.String(), ifMatch, value} {
		fmt.Fprintf(h, "%d:%s", len(s), s)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func etag(version uint64) string { return `"` + strconv.FormatUint(version, 10) + `"` }

func (r *Resource) handlePut(w http.ResponseWriter, req *http.Request, key string) {
	if err := validateKey(key); err != nil {
		badRequest(w, "%v", err)
		return
	}
	tok, scope, err := parseFencing(req)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	rawIfMatch := req.Header.Get(HeaderIfMatch)
	var wantVersion uint64
	var wantExists, hasIfMatch bool
	if rawIfMatch != "" {
		hasIfMatch = true
		if wantVersion, wantExists, err = parseIfMatch(rawIfMatch); err != nil {
			badRequest(w, "%v", err)
			return
		}
	}
	idemKey := req.Header.Get(HeaderIdempotencyKey)
	if len(idemKey) > MaxIdempotencyKeyLen {
		badRequest(w, "%s longer than %d bytes", HeaderIdempotencyKey, MaxIdempotencyKeyLen)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, MaxValueSize))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeJSON(w, http.StatusRequestEntityTooLarge, errorBody{Error: fmt.Sprintf("value larger than %d bytes", MaxValueSize)})
			return
		}
		badRequest(w, "read body: %v", err)
		return
	}
	if !utf8.Valid(body) {
		badRequest(w, "value is not UTF-8 text")
		return
	}
	value := string(body)
	sum := ""
	if idemKey != "" {
		sum = fingerprint(key, scope, tok, rawIfMatch, value)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.log == nil {
		writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: "resource closed"})
		return
	}
	if idemKey != "" {
		if prev, ok := r.idem[idemKey]; ok {
			if prev.sum != sum {
				writeJSON(w, http.StatusUnprocessableEntity, errorBody{Error: errIdempotencyReused})
				return
			}
			wr := r.writes[prev.seq-1]
			w.Header().Set(HeaderReplayed, "true")
			w.Header().Set("ETag", etag(wr.Version))
			writeJSON(w, http.StatusOK, PutResult{Key: wr.Key, Token: wr.Token, Scope: wr.Scope, Seq: wr.Seq, Version: wr.Version})
			return
		}
	}
	adm, err := r.guard.Check(scope, tok)
	if err != nil && !r.cfg.Unfenced {
		r.reject(w, scope, tok, err, "write", key)
		return
	}
	cur, exists := r.kv[key]
	if hasIfMatch {
		ok := exists && cur.Version == wantVersion
		if wantExists {
			ok = exists
		} else if wantVersion == 0 {
			ok = !exists
		}
		if !ok {
			v := cur.Version
			writeJSON(w, http.StatusPreconditionFailed, errorBody{Error: "version mismatch", Key: key, Version: &v})
			return
		}
	}
	rec := resourceRecord{
		Type: recordWrite, Seq: uint64(len(r.writes)) + 1, Key: key, Value: value, Token: tok, Scope: scope,
		Version: cur.Version + 1, IdemKey: idemKey, IdemSum: sum, Time: r.clock.Now().UTC(),
	}
	if err := r.persist(rec); err != nil {
		r.logger.Error("write not persisted", "key", key, "err", err)
		writeJSON(w, http.StatusInternalServerError, errorBody{Error: "write not persisted: " + err.Error()})
		return
	}
	r.applyWrite(rec)
	if err != nil { // unfenced mode let a stale token through
		r.logger.Warn("unfenced: accepted a stale token", "scope", scope, "token", tok, "floor", adm.Floor, "key", key)
	}
	w.Header().Set("ETag", etag(rec.Version))
	writeJSON(w, http.StatusOK, PutResult{Key: key, Token: tok, Scope: scope, Seq: rec.Seq, Version: rec.Version})
}

func (r *Resource) persist(rec resourceRecord) error {
	p, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return r.log.append(true, p)
}

// reject answers 409 for a stale token (or 400 for another Check error) and
// counts it. The count is appended without fsync: it is not acknowledged
// state, and the next write's fsync carries it.
func (r *Resource) reject(w http.ResponseWriter, scope string, tok Token, err error, what, key string) {
	var se *StaleError
	if !errors.As(err, &se) {
		badRequest(w, "%v", err)
		return
	}
	r.rejected[scope]++
	if p, merr := json.Marshal(resourceRecord{Type: recordReject, Token: tok, Scope: scope}); merr == nil {
		if aerr := r.log.append(false, p); aerr != nil {
			r.logger.Error("rejection not recorded", "err", aerr)
		}
	}
	r.logger.Info("rejected stale token", "op", what, "scope", scope, "token", tok, "floor", se.Floor, "key", key)
	writeJSON(w, http.StatusConflict, errorBody{Error: errStaleFencingToken, Scope: scope, Token: tok, Floor: se.Floor})
}

func (r *Resource) handleFence(w http.ResponseWriter, req *http.Request) {
	tok, scope, err := parseFencing(req)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.log == nil {
		writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: "resource closed"})
		return
	}
	adm, err := r.guard.Check(scope, tok)
	if err != nil && !r.cfg.Unfenced {
		r.reject(w, scope, tok, err, "fence", "")
		return
	}
	if adm.Raises() {
		rec := resourceRecord{Type: recordFence, Token: tok, Scope: scope, Time: r.clock.Now().UTC()}
		if err := r.persist(rec); err != nil {
			r.logger.Error("fence not persisted", "scope", scope, "err", err)
			writeJSON(w, http.StatusInternalServerError, errorBody{Error: "fence not persisted: " + err.Error()})
			return
		}
		r.guard.Apply(adm)
		r.logger.Info("fenced", "scope", scope, "floor", tok, "previous", adm.Floor)
	}
	writeJSON(w, http.StatusOK, FenceResult{Scope: scope, Token: tok, Floor: r.guard.Floor(scope)})
}

func (r *Resource) handleGet(w http.ResponseWriter, key string) {
	if err := validateKey(key); err != nil {
		badRequest(w, "%v", err)
		return
	}
	r.mu.Lock()
	e, ok := r.kv[key]
	closed := r.log == nil
	r.mu.Unlock()
	switch {
	case closed:
		writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: "resource closed"})
	case !ok:
		writeJSON(w, http.StatusNotFound, errorBody{Error: "key not found", Key: key})
	default:
		w.Header().Set("ETag", etag(e.Version))
		writeJSON(w, http.StatusOK, e)
	}
}

func (r *Resource) handleLog(w http.ResponseWriter, req *http.Request) {
	scope := req.URL.Query().Get("scope")
	r.mu.Lock()
	defer r.mu.Unlock()
	res := LogResult{Writes: []Write{}, Unfenced: r.cfg.Unfenced}
	all := r.guard.Floors()
	if scope == "" {
		res.Writes = append(res.Writes, r.writes...)
		for _, n := range r.rejected {
			res.Rejected += n
		}
		res.Floors = all
	} else {
		for _, wr := range r.writes {
			if wr.Scope == scope {
				res.Writes = append(res.Writes, wr)
			}
		}
		res.Rejected = r.rejected[scope]
		res.Floors = map[string]Token{}
		if f, ok := all[scope]; ok {
			res.Floors[scope] = f
		}
	}
	writeJSON(w, http.StatusOK, res)
}
