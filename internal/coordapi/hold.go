package coordapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/lock"
	"github.com/coordkit/coordkit/semaphore"
	"github.com/coordkit/coordkit/session"
)

// maxBody bounds a request body.
const maxBody = 64 << 10

// HoldRequest is the body of POST /v1/lock, /v1/semaphore and
// /v1/election/campaign.
type HoldRequest struct {
	Name   string `json:"name"`
	Prefix string `json:"prefix,omitempty"`
	// Mode is a lock's: "exclusive" (default) or "shared".
	Mode string `json:"mode,omitempty"`
	// Limit is a semaphore's number of slots (required, at least 1).
	Limit int `json:"limit,omitempty"`
	// ID is what a candidate proclaims (required for a campaign).
	ID string `json:"id,omitempty"`
	// Timeout is how long to wait, in seconds; absent: until the request
	// is closed.
	Timeout *float64 `json:"timeout,omitempty"`
	// Try: acquire only if free now, never wait (locks and semaphores).
	Try bool `json:"try,omitempty"`
}

// Event is one line of a hold's stream.
type Event struct {
	Event string `json:"event"` // waiting, acquired, held, lost, released, error
	Kind  string `json:"kind,omitempty"`
	Name  string `json:"name,omitempty"`
	Mode  string `json:"mode,omitempty"`
	Slot  *int   `json:"slot,omitempty"`

	Token         fencing.Token `json:"token,omitempty"`
	Scope         string        `json:"scope,omitempty"`
	Key           string        `json:"key,omitempty"`
	Lease         string        `json:"lease,omitempty"`
	LeaseDeadline *time.Time    `json:"lease_deadline,omitempty"`
	// LeaseRemainingSeconds is LeaseDeadline as the time left when the
	// line was written: what a client on another machine counts down on
	// its own monotonic clock, since its wall clock may be off the agent's.
	LeaseRemainingSeconds *float64 `json:"lease_remaining_s,omitempty"`

	HolderKey   string        `json:"holder_key,omitempty"`   // waiting on a lock
	HolderToken fencing.Token `json:"holder_token,omitempty"` // waiting on a lock

	Reason  string `json:"reason,omitempty"`  // lost
	Code    string `json:"code,omitempty"`    // error
	Message string `json:"message,omitempty"` // error
}

// holding is what every hold is: *lock.Held, *semaphore.Held and
// *election.Leadership (a session.HeldKey and its scope).
type holding interface {
	Token() fencing.Token
	Key() string
	Scope() string
	Lost() <-chan struct{}
	Err() error
	Session() *session.Session
	Release(ctx context.Context) error
}

// A plan is one validated hold request: what it occupies on a lane and
// how it acquires on a session. closeFn closes the library handle.
type plan struct {
	kind, mode string
	occupy     string
	acquire    func(ctx context.Context, s *session.Session, waiting func(Event)) (holding, func(), error)
}

// readHold reads and checks the body: the library's rules
// (primitive.Config.Validate) and the API's own (mode, id, timeout, try).
func readHold(r *http.Request, kind primitive.Kind) (HoldRequest, primitive.Config, error) {
	var req HoldRequest
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1)) // to EOF: the server then notices a closed connection
	if err != nil {
		return req, primitive.Config{}, fmt.Errorf("%w: reading the body: %v", errBadRequest, err)
	}
	if len(b) > maxBody {
		return req, primitive.Config{}, fmt.Errorf("%w: body larger than %d bytes", errBadRequest, maxBody)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, primitive.Config{}, fmt.Errorf("%w: body: %v", errBadRequest, err)
	}
	cfg := primitive.Config{Kind: kind, Name: req.Name, Prefix: req.Prefix, Limit: req.Limit}
	if err := cfg.Validate(); err != nil {
		return req, cfg, fmt.Errorf("%w: %w", errBadRequest, err)
	}
	switch {
	case req.Timeout != nil && (*req.Timeout < 0 || math.IsNaN(*req.Timeout) || *req.Timeout > 1e9):
		return req, cfg, fmt.Errorf("%w: timeout must be a number of seconds from 0 to 1e9 (omit it to wait for ever)", errBadRequest)
	case req.Try && req.Timeout != nil:
		return req, cfg, fmt.Errorf("%w: try and timeout exclude each other (try never waits)", errBadRequest)
	case kind == primitive.KindLock && req.Mode != "" && req.Mode != "exclusive" && req.Mode != "shared":
		return req, cfg, fmt.Errorf("%w: mode %q: want exclusive or shared", errBadRequest, req.Mode)
	case kind != primitive.KindLock && req.Mode != "":
		return req, cfg, fmt.Errorf("%w: mode is a lock's", errBadRequest)
	case kind == primitive.KindElection && req.ID == "":
		return req, cfg, fmt.Errorf("%w: a campaign needs an id", errBadRequest)
	case kind != primitive.KindElection && req.ID != "":
		return req, cfg, fmt.Errorf("%w: id is a campaign's", errBadRequest)
	case kind == primitive.KindElection && req.Try:
		return req, cfg, fmt.Errorf("%w: a campaign cannot try once; give a timeout", errBadRequest)
	}
	return req, cfg, nil
}

func (a *API) handleLock(w http.ResponseWriter, r *http.Request) {
	req, cfg, err := readHold(r, primitive.KindLock)
	if err != nil {
		a.refuse(w, err)
		return
	}
	mode, newMutex, occupy := "exclusive", lock.New, cfg.KeyPrefix()
	if req.Mode == "shared" {
		mode, newMutex, occupy = "shared", lock.NewReader, cfg.KeyPrefix()+primitive.ReaderInfix
	}
	a.hold(w, r, req, plan{kind: "lock", mode: mode, occupy: occupy,
		acquire: func(ctx context.Context, s *session.Session, waiting func(Event)) (holding, func(), error) {
			return acquireWith(func() (*lock.Mutex, error) {
				return newMutex(a.cfg.Client, req.Name, lock.WithSession(s), lock.WithPrefix(req.Prefix),
					lock.WithOnWait(func(wt lock.Waiting) {
						waiting(Event{Event: "waiting", HolderKey: wt.HolderKey, HolderToken: wt.HolderToken})
					}))
			}, func(m *lock.Mutex) (*lock.Held, error) {
				if req.Try {
					return m.TryLock(ctx)
				}
				return m.Lock(ctx)
			})
		}})
}

func (a *API) handleSemaphore(w http.ResponseWriter, r *http.Request) {
	req, _, err := readHold(r, primitive.KindSemaphore)
	if err != nil {
		a.refuse(w, err)
		return
	}
	a.hold(w, r, req, plan{kind: "semaphore",
		acquire: func(ctx context.Context, s *session.Session, waiting func(Event)) (holding, func(), error) {
			return acquireWith(func() (*semaphore.Semaphore, error) {
				return semaphore.New(a.cfg.Client, req.Name, req.Limit, semaphore.WithSession(s), semaphore.WithPrefix(req.Prefix),
					semaphore.WithOnWait(func(semaphore.Waiting) { waiting(Event{Event: "waiting"}) }))
			}, func(sem *semaphore.Semaphore) (*semaphore.Held, error) {
				if req.Try {
					return sem.TryAcquire(ctx)
				}
				return sem.Acquire(ctx)
			})
		}})
}

func (a *API) handleCampaign(w http.ResponseWriter, r *http.Request) {
	req, cfg, err := readHold(r, primitive.KindElection)
	if err != nil {
		a.refuse(w, err)
		return
	}
	a.hold(w, r, req, plan{kind: "election", occupy: cfg.KeyPrefix(),
		acquire: func(ctx context.Context, s *session.Session, _ func(Event)) (holding, func(), error) {
			return acquireWith(func() (*election.Election, error) {
				return election.New(a.cfg.Client, req.Name, election.WithSession(s), election.WithPrefix(req.Prefix))
			}, func(e *election.Election) (*election.Leadership, error) { return e.Campaign(ctx, req.ID) })
		}})
}

// acquireWith makes a library handle, acquires through it and returns the
// hold with the handle's Close; a failed acquisition closes it at once.
func acquireWith[T io.Closer, H holding](mk func() (T, error), acquire func(T) (H, error)) (holding, func(), error) {
	x, err := mk()
	if err != nil {
		return nil, nil, err
	}
	h, err := acquire(x)
	if err != nil {
		_ = x.Close()
		return nil, nil, err
	}
	return h, func() { _ = x.Close() }, nil
}

// refuse answers a request refused before its stream started.
func (a *API) refuse(w http.ResponseWriter, err error) {
	code, status := codeOf(err)
	writeError(w, status, code, err.Error())
}

// stream writes a hold's events, one JSON object per line, each flushed.
type stream struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

// streamContext is the context of a stream: it ends with the request (the
// client went away) or when the agent closes (cause errShuttingDown).
func (a *API) streamContext(r *http.Request) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(r.Context())
	stop := context.AfterFunc(a.ctx, func() { cancel(errShuttingDown) })
	return ctx, func() { stop(); cancel(nil) }
}

// startStream writes the headers of a stream and flushes them, so that a
// client sees its request accepted while it waits.
func startStream(w http.ResponseWriter) (stream, error) {
	h := w.Header()
	h.Set("Content-Type", "application/x-ndjson")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := stream{w: w, rc: http.NewResponseController(w)}
	return s, s.rc.Flush()
}

// sendTimeout bounds one line's write: a client that stopped reading
// (its socket's buffers full) counts as gone, so that its hold is released
// and the agent's Close is not stuck behind it.
const sendTimeout = 10 * time.Second

func (s stream) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_ = s.rc.SetWriteDeadline(time.Now().Add(sendTimeout)) // not every ResponseWriter supports it
	if _, err := s.w.Write(append(b, '\n')); err != nil {
		return err
	}
	return s.rc.Flush()
}

// hold runs one hold: it starts the stream, acquires on a lane (writing
// "waiting" if the library says it waits), then writes "acquired" and
// "held" lines until the request ends (release), the hold is lost ("lost")
// or the agent closes (release, then "lost").
func (a *API) hold(w http.ResponseWriter, r *http.Request, req HoldRequest, p plan) {
	ctx, cancel := a.streamContext(r)
	defer cancel()
	out, err := startStream(w)
	if err != nil {
		return
	}

	actx, acancel := ctx, context.CancelFunc(func() {})
	if req.Timeout != nil {
		actx, acancel = context.WithTimeout(ctx, time.Duration(*req.Timeout*float64(time.Second)))
	}
	defer acancel()
	l, s, err := a.lanes.take(actx, p.occupy)
	if err != nil {
		a.acquireFailed(ctx, out, notAcquiredWithin(ctx, actx, p.kind, req, err))
		return
	}
	defer a.lanes.put(l, p.occupy)
	// The acquisition runs here, and writes "waiting" itself: "acquired"
	// follows the grant with no hop between goroutines (bench lock's API
	// handoff), and "waiting" always comes before it.
	h, closeFn, err := p.acquire(actx, s, func(ev Event) {
		ev.Kind, ev.Name, ev.Mode = p.kind, req.Name, p.mode
		_ = out.send(ev) // a failed write shows as the request's end
	})
	acancel()
	if err != nil {
		a.acquireFailed(ctx, out, notAcquiredWithin(ctx, actx, p.kind, req, err))
		return
	}
	defer closeFn()
	a.serveHeld(ctx, out, req, p, h)
}

// notAcquiredWithin says what the request's timeout ending its acquisition
// (actx's deadline; ctx is the request's own) means, as coordctl lock and
// sem do, rather than "context deadline exceeded"; the error still matches
// context.DeadlineExceeded (code "timeout"). Other errors, the request's
// own end and a deadline of the library's pass unchanged.
func notAcquiredWithin(ctx, actx context.Context, kind string, req HoldRequest, err error) error {
	if req.Timeout == nil || ctx.Err() != nil || !errors.Is(actx.Err(), context.DeadlineExceeded) || !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	within := time.Duration(*req.Timeout * float64(time.Second))
	switch kind {
	case "semaphore":
		return fmt.Errorf("semaphore %q: no slot acquired within %s: %w", req.Name, within, context.DeadlineExceeded)
	case "election":
		return fmt.Errorf("election %q: leadership not won within %s: %w", req.Name, within, context.DeadlineExceeded)
	}
	return fmt.Errorf("lock %q not acquired within %s: %w", req.Name, within, context.DeadlineExceeded)
}

// acquireFailed writes the "error" event of an acquisition that failed;
// nothing when the client went away.
func (a *API) acquireFailed(ctx context.Context, out stream, err error) {
	if errors.Is(context.Cause(ctx), errShuttingDown) {
		err = errShuttingDown
	} else if ctx.Err() != nil {
		return
	}
	code, _ := codeOf(err)
	_ = out.send(Event{Event: "error", Code: code, Message: err.Error()})
}

// serveHeld streams a granted hold until it ends, and releases it.
func (a *API) serveHeld(ctx context.Context, out stream, req HoldRequest, p plan, h holding) {
	release := func() error {
		rctx, cancel := context.WithTimeout(context.Background(), a.cfg.RequestTimeout)
		defer cancel()
		return h.Release(rctx)
	}
	ev := a.heldEvent("acquired", h)
	ev.Kind, ev.Name, ev.Mode, ev.Scope, ev.Key = p.kind, req.Name, p.mode, h.Scope(), h.Key()
	ev.Lease = fmt.Sprintf("%x", int64(h.Session().Lease()))
	if sh, ok := h.(*semaphore.Held); ok {
		slot := sh.Slot()
		ev.Slot = &slot
	}
	if out.send(ev) != nil {
		_ = release()
		return
	}
	tick := time.NewTicker(a.cfg.HeldInterval)
	defer tick.Stop()
	for {
		select {
		case <-h.Lost():
			reason := reasonOf(h.Err())
			a.cfg.Logger.Warn("hold lost", "kind", p.kind, "name", req.Name, "key", h.Key(), "token", h.Token(), "reason", reason)
			_ = out.send(Event{Event: "lost", Token: h.Token(), Reason: reason})
			// The key may outlive a local deadline: remove it if it is there.
			if err := release(); err != nil && !errors.Is(err, session.ErrNotHeld) && !errors.Is(err, election.ErrNotLeader) {
				a.cfg.Logger.Warn("release after a loss", "kind", p.kind, "name", req.Name, "key", h.Key(), "err", err)
			}
			return
		case <-ctx.Done():
			err := release()
			if errors.Is(context.Cause(ctx), errShuttingDown) {
				reason := errShuttingDown.Error()
				if err != nil {
					reason += "; release: " + err.Error()
				}
				_ = out.send(Event{Event: "lost", Token: h.Token(), Reason: reason})
				return
			}
			// A client that only shut down its sending side reads this and
			// knows the key is gone; one that closed the connection does not.
			switch {
			case err == nil:
				_ = out.send(Event{Event: "released", Token: h.Token()})
			case errors.Is(err, session.ErrNotHeld), errors.Is(err, election.ErrNotLeader):
				_ = out.send(Event{Event: "lost", Token: h.Token(), Reason: err.Error()}) // lost before the release
			default:
				a.cfg.Logger.Warn("release", "kind", p.kind, "name", req.Name, "key", h.Key(), "err", err)
				code, _ := codeOf(err)
				_ = out.send(Event{Event: "error", Code: code, Message: "release: " + err.Error()})
			}
			return
		case <-tick.C:
			if out.send(a.heldEvent("held", h)) != nil {
				_ = release()
				return
			}
		}
	}
}

func (a *API) heldEvent(name string, h holding) Event {
	deadline := h.Session().Deadline()
	d, left := deadline.UTC(), remaining(deadline)
	return Event{Event: name, Token: h.Token(), LeaseDeadline: &d, LeaseRemainingSeconds: &left}
}

// remaining is the time left until deadline, in seconds (at least 0), on
// the monotonic clock.
func remaining(deadline time.Time) float64 {
	return max(time.Until(deadline), 0).Seconds()
}

func reasonOf(err error) string {
	if err == nil {
		return "lost"
	}
	return err.Error()
}
