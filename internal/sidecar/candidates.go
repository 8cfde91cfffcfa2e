package sidecar

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/coordkit/coordkit/election"
)

// CandidatesView is the body of GET /v1/candidates: the election's queue,
// the leader first, each candidate with its attributes (null for a foreign
// one, such as `etcdctl elect`).
type CandidatesView struct {
	Name       string               `json:"name"`
	Policy     election.Policy      `json:"policy"`
	Candidates []election.Candidate `json:"candidates"`
}

func (a *API) handleCandidates(w http.ResponseWriter, r *http.Request) {
	if a.cfg.Candidates == nil {
		writeJSON(w, http.StatusNotImplemented, apiError{Error: "candidates are not available"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), a.cfg.ReadTimeout)
	defer cancel()
	cs, err := a.cfg.Candidates(ctx)
	if err != nil {
		msg := err.Error()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && r.Context().Err() == nil {
			msg = fmt.Sprintf("etcd did not answer within %s: %s", a.cfg.ReadTimeout, msg)
		}
		writeJSON(w, http.StatusServiceUnavailable, apiError{Error: msg})
		return
	}
	if cs == nil {
		cs = []election.Candidate{}
	}
	st := a.cfg.Tracker.State()
	writeJSON(w, http.StatusOK, CandidatesView{Name: st.Name, Policy: a.cfg.Policy, Candidates: cs})
}

// resignTarget reads POST /v1/resign's "to": ok is false without one (a
// plain resign); "best" is election.Best.
func resignTarget(r *http.Request) (to string, ok bool, err error) {
	q := r.URL.Query()
	if !q.Has("to") {
		return "", false, nil
	}
	switch to = q.Get("to"); to {
	case "":
		return "", false, errors.New("sidecar: to= names a candidate id, or best")
	case "best":
		return election.Best, true, nil
	}
	return to, true, nil
}

// resignToStatus maps a ResignTo error to its HTTP status.
func resignToStatus(err error) int {
	switch {
	case errors.Is(err, ErrNotLeader), errors.Is(err, election.ErrHandoverBlocked):
		return http.StatusConflict
	case errors.Is(err, election.ErrNoCandidate):
		return http.StatusNotFound
	case errors.Is(err, election.ErrTargetGone):
		return http.StatusOK // resigned; the next in line leads
	}
	return http.StatusServiceUnavailable
}

func (a *API) handleResignTo(ctx context.Context, w http.ResponseWriter, to string, bad error) {
	switch {
	case bad != nil:
		writeJSON(w, http.StatusBadRequest, apiError{Error: bad.Error()})
		return
	case a.cfg.ResignTo == nil:
		writeJSON(w, http.StatusNotImplemented, apiError{Error: "resign-to is not available"})
		return
	}
	err := a.cfg.ResignTo(ctx, to)
	v := a.cfg.Tracker.State().View()
	if err == nil {
		writeJSON(w, http.StatusOK, v)
		return
	}
	writeJSON(w, resignToStatus(err), apiError{Error: err.Error(), View: &v})
}
