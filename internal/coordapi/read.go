package coordapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/internal/primitive"
	"github.com/coordkit/coordkit/internal/report"
)

// readConfig is the name and prefix of a read (?name=N&prefix=P), checked
// with the library's rules (primitive.Config.ValidateKeys).
func readConfig(r *http.Request, kind primitive.Kind) (primitive.Config, error) {
	q := r.URL.Query()
	cfg := primitive.Config{Kind: kind, Name: q.Get("name"), Prefix: q.Get("prefix")}
	if err := cfg.ValidateKeys(); err != nil {
		return cfg, fmt.Errorf("%w: %w", errBadRequest, err)
	}
	return cfg, nil
}

// read answers a one-request read: the config from the query, fn within
// RequestTimeout, its result as JSON.
func (a *API) read(w http.ResponseWriter, r *http.Request, kind primitive.Kind, fn func(context.Context, primitive.Config) (any, error)) {
	cfg, err := readConfig(r, kind)
	if err != nil {
		a.refuse(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), a.cfg.RequestTimeout)
	defer cancel()
	v, err := fn(ctx, cfg)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && r.Context().Err() == nil {
			err = fmt.Errorf("%w within the request timeout %s: %w", errNoAnswer, a.cfg.RequestTimeout, err)
		}
		a.refuse(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// handleLockStatus is `coordctl lock status -w json`: holders and waiters.
func (a *API) handleLockStatus(w http.ResponseWriter, r *http.Request) {
	a.read(w, r, primitive.KindLock, func(ctx context.Context, cfg primitive.Config) (any, error) {
		st, err := primitive.ReadLock(ctx, a.cfg.Client, cfg)
		return report.LockStatus{Name: cfg.Name, Status: st}, err
	})
}

// handleSemStatus is `coordctl sem status -w json`.
func (a *API) handleSemStatus(w http.ResponseWriter, r *http.Request) {
	a.read(w, r, primitive.KindSemaphore, func(ctx context.Context, cfg primitive.Config) (any, error) {
		st, err := primitive.ReadSemaphore(ctx, a.cfg.Client, cfg)
		return report.SemStatus{Name: cfg.Name, Status: st}, err
	})
}

// withElection runs fn on the election cfg names (no session: reads only).
func (a *API) withElection(cfg primitive.Config, fn func(*election.Election) (any, error)) (any, error) {
	e, err := election.New(a.cfg.Client, cfg.Name, election.WithPrefix(cfg.Prefix))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errBadRequest, err)
	}
	defer e.Close()
	return fn(e)
}

// handleLeader is the leader now: {"event":"leader","leader":ID|null,"token":T}.
func (a *API) handleLeader(w http.ResponseWriter, r *http.Request) {
	a.read(w, r, primitive.KindElection, func(ctx context.Context, cfg primitive.Config) (any, error) {
		return a.withElection(cfg, func(e *election.Election) (any, error) {
			l, err := e.Leader(ctx)
			if errors.Is(err, election.ErrNoLeader) {
				return report.LeaderEventOf(nil), nil
			}
			if err != nil {
				return nil, err
			}
			return report.LeaderEventOf(&l), nil
		})
	})
}

// handleCandidates is `coordctl elect --candidates -w json`.
func (a *API) handleCandidates(w http.ResponseWriter, r *http.Request) {
	a.read(w, r, primitive.KindElection, func(ctx context.Context, cfg primitive.Config) (any, error) {
		return a.withElection(cfg, func(e *election.Election) (any, error) {
			return report.CandidatesOf(ctx, e)
		})
	})
}

// handleObserve streams the leader, then one line per change, as
// `coordctl elect --observe -w json` prints them ("leader", or "unknown"
// when etcd has not answered for longer than the leader's lease), until the
// request or the agent ends.
func (a *API) handleObserve(w http.ResponseWriter, r *http.Request) {
	cfg, err := readConfig(r, primitive.KindElection)
	if err != nil {
		a.refuse(w, err)
		return
	}
	e, err := election.New(a.cfg.Client, cfg.Name, election.WithPrefix(cfg.Prefix))
	if err != nil {
		a.refuse(w, fmt.Errorf("%w: %w", errBadRequest, err))
		return
	}
	defer e.Close()
	ctx, cancel := a.streamContext(r)
	defer cancel()
	out, err := startStream(w)
	if err != nil {
		return
	}
	send := out.send
	err = e.Watch(ctx, election.WatchConfig{RequestTimeout: a.cfg.RequestTimeout, OnEvent: func(ev election.WatchEvent) error {
		switch ev.Kind {
		case election.WatchLeader:
			return send(report.LeaderEventOf(ev.Leader))
		case election.WatchUnknown:
			return send(report.LeaderEvent{Event: "unknown", Reason: ev.Reason})
		}
		return nil
	}})
	if err != nil && ctx.Err() == nil {
		code, _ := codeOf(err)
		_ = send(Event{Event: "error", Code: code, Message: err.Error()})
	}
}
