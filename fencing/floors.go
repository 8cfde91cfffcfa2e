package fencing

import (
	"context"
	"net/http"
)

// Highest returns the scope with the highest floor and that floor, "" and
// 0 for no floors. Of equal floors the smallest scope wins, so the answer
// does not depend on map order. After etcd is restored from a snapshot or
// rebuilt, its revisions (the tokens) restart below the floors: the
// restored cluster's revision must be bumped above this floor
// (docs/operations.md).
func Highest(floors map[string]Token) (string, Token) {
	var scope string
	var floor Token
	for s, f := range floors {
		if f > floor || (f == floor && f != 0 && s < scope) {
			scope, floor = s, f
		}
	}
	return scope, floor
}

// FloorsResult is the body of GET /v1/floors: every scope's floor and the
// highest of them.
// A floor of every scope (set by a repair) counts as the highest when no
// named scope's floor is above it; HighestScope is then empty.
type FloorsResult struct {
	Floors map[string]Token `json:"floors"`
	// All is the floor of every scope, named or not (Guard.RaiseAll), 0 if none.
	All          Token  `json:"all,omitempty"`
	Highest      Token  `json:"highest"`
	HighestScope string `json:"highest_scope"`
}

func (r *Resource) handleFloors(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	floors, all := r.guard.Floors(), r.guard.FloorAll()
	r.mu.Unlock()
	res := FloorsResult{Floors: floors, All: all}
	res.HighestScope, res.Highest = Highest(floors)
	if all > res.Highest {
		res.HighestScope, res.Highest = "", all
	}
	writeJSON(w, http.StatusOK, res)
}

// Floors returns every scope's floor and the highest (GET /v1/floors).
// On success Floors is not nil, also when no scope has a floor, so that its
// JSON is {"floors":{}}.
func (c *Client) Floors(ctx context.Context) (FloorsResult, error) {
	var f FloorsResult
	req, err := c.newRequest(ctx, http.MethodGet, "/v1/floors", nil)
	if err != nil {
		return f, err
	}
	if err = c.do(req, "", 0, &f); err == nil && f.Floors == nil {
		f.Floors = map[string]Token{}
	}
	return f, err
}
