package safety

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/coordkit/coordkit/fencing"
)

// ResourceImpl is the implementation of the protected resource.
type ResourceImpl string

// Resource implementations.
const (
	ResourceHTTP ResourceImpl = "http" // coordkit's reference resource (fencing.Resource), in process
	ResourceSQL  ResourceImpl = "sql"  // a counter row per slot in a SQL database, fenced by fencing/sqlfence
)

// Mode is how the resource protects the counter.
type Mode string

// Modes.
const (
	ModeFenced   Mode = "fenced"   // the resource checks each write's token against its scope's floor
	ModeUnfenced Mode = "unfenced" // it checks nothing: the baseline
	// ModeIfMatch: no token check; each write is conditional on the
	// version its writer read (optimistic concurrency, If-Match). The best
	// a lock without tokens can do; HTTP resource only.
	ModeIfMatch Mode = "if-match"
)

// Resource is the protected resource as the harness uses it: the
// consumer-side interface its implementations (the reference HTTP
// resource, a SQL table) are adapted to.
type Resource interface {
	// Fence raises scope's floor to token (no write).
	Fence(ctx context.Context, scope string, token uint64) error
	// Read returns the counter of slot: its value and version (0, 0 if
	// it was never written).
	Read(ctx context.Context, slot int) (value int, version uint64, err error)
	// Write sets the counter of slot to value, tagged with the write's id,
	// sending token and scope; in ModeIfMatch only if the counter's version
	// is still version.
	Write(ctx context.Context, slot int, value int, id string, token uint64, scope string, version uint64) error
	// Outcome classifies an error of Fence, Read or Write.
	Outcome(err error) Outcome
	// Log returns the accepted writes of every slot in the order the
	// resource applied them, and the count of stale refusals.
	Log(ctx context.Context) (writes []Write, rejected int, err error)
	Close() error
}

// slotKey is the resource key of slot's counter.
func slotKey(slot int) string {
	if slot == 0 {
		return counterKey
	}
	return counterKey + "-" + strconv.Itoa(slot)
}

// slotOfKey is the inverse of slotKey; ok is false for other keys.
func slotOfKey(key string) (int, bool) {
	if key == counterKey {
		return 0, true
	}
	rest, ok := strings.CutPrefix(key, counterKey+"-")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n > 0
}

// httpResource is coordkit's reference resource, started in process.
type httpResource struct {
	res   *fencing.LocalServer
	httpc *http.Client
	fc    fencing.Client
	mode  Mode
}

func startHTTPResource(dir string, mode Mode) (*httpResource, error) {
	res, err := fencing.StartLocal(fencing.ResourceConfig{DataDir: filepath.Join(dir, "resource"), Unfenced: mode != ModeFenced})
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	return &httpResource{res: res, httpc: hc, fc: fencing.Client{BaseURL: res.URL, HTTP: hc}, mode: mode}, nil
}

// URL is the resource's base URL, for the process clients.
func (h *httpResource) URL() string { return h.res.URL }

func (h *httpResource) Fence(ctx context.Context, scope string, token uint64) error {
	_, err := h.fc.Fence(ctx, fencing.Token(token), scope)
	return err
}

func (h *httpResource) Read(ctx context.Context, slot int) (int, uint64, error) {
	e, err := h.fc.Get(ctx, slotKey(slot))
	if errors.Is(err, fencing.ErrNotFound) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	v, _, err := ParseValue(e.Value)
	return v, e.Version, err
}

func (h *httpResource) Write(ctx context.Context, slot, value int, id string, token uint64, scope string, version uint64) error {
	var opts []fencing.PutOption
	if h.mode == ModeIfMatch {
		opts = append(opts, fencing.IfMatch(version))
	}
	_, err := h.fc.Put(ctx, slotKey(slot), FormatValue(value, id), fencing.Token(token), scope, opts...)
	return err
}

// Outcome: refused as stale, answered with another error (no effect,
// including a failed If-Match), or unknown (no answer).
func (h *httpResource) Outcome(err error) Outcome { return outcomeOf(err) }

func (h *httpResource) Log(ctx context.Context) ([]Write, int, error) {
	lg, err := h.fc.Log(ctx, "")
	if err != nil {
		return nil, 0, err
	}
	var out []Write
	for _, w := range lg.Writes {
		slot, ok := slotOfKey(w.Key)
		if !ok {
			continue
		}
		v, id, _ := ParseValue(w.Value)
		out = append(out, Write{Seq: w.Seq, Token: uint64(w.Token), Value: v, ID: id, Slot: slot})
	}
	return out, lg.Rejected, nil
}

func (h *httpResource) Close() error {
	h.httpc.CloseIdleConnections()
	return h.res.Close()
}

// outcomeOf classifies a reference-resource error: refused as stale,
// refused by If-Match, answered with another error (no effect), or unknown
// (no answer).
func outcomeOf(err error) Outcome {
	var api *fencing.APIError
	switch {
	case err == nil:
		return OK
	case errors.Is(err, fencing.ErrStale):
		return Stale
	case errors.Is(err, fencing.ErrVersionMismatch):
		return Conflict
	case errors.As(err, &api):
		return Fail
	}
	return Unknown
}
