package fencing

import (
	"fmt"
	"maps"
	"sync"
)

// Admission is the outcome of checking a token against its scope's floor.
type Admission struct {
	Scope string `json:"scope"`
	Token Token  `json:"token"`
	// Floor is the scope's floor when the token was checked (0 if none yet).
	Floor Token `json:"floor"`
}

// Raises reports whether admitting the token raises the floor (Token > Floor).
// An admission that does not raise it changes nothing that must be persisted.
func (a Admission) Raises() bool { return a.Token > a.Floor }

// NewFloor is the scope's floor once the admission is applied.
func (a Admission) NewFloor() Token { return max(a.Token, a.Floor) }

// Guard keeps, per scope, the highest token it has admitted: the floor. A
// token below the floor is rejected with a *StaleError; a token at or above
// it is admitted and raises the floor to it.
//
// Besides the per-scope floors a Guard has a floor for every scope, named or
// not (RaiseAll): a repair that cannot tell which scope a damaged record
// named raises it to a bound no granted token exceeds, and every scope's
// floor is at least that.
//
// Guard is pure — no I/O, no clock — and safe for concurrent use. Its zero
// value is ready (every floor 0). To make floors survive a restart, persist
// an admission before applying it (see Check and AdmitFunc, or use
// DurableGuard, which does so with fsync).
type Guard struct {
	mu     sync.Mutex
	floors map[string]Token
	// all is the floor of every scope, named in floors or not.
	all Token
}

func checkToken(t Token) error {
	if !t.Valid() {
		return fmt.Errorf("%w: %d (want 1..%d)", ErrInvalidToken, t, MaxToken)
	}
	return nil
}

func checkArgs(scope string, t Token) error {
	if err := checkToken(t); err != nil {
		return err
	}
	return ValidateScope(scope)
}

// checkAllArgs checks a record of the floor of every scope: a valid token
// and no scope.
func checkAllArgs(scope string, t Token) error {
	if err := checkToken(t); err != nil {
		return err
	}
	if scope != "" {
		return fmt.Errorf("%w %q: the floor of every scope names none", ErrInvalidScope, scope)
	}
	return nil
}

func (g *Guard) check(scope string, t Token) (Admission, error) {
	if err := checkArgs(scope, t); err != nil {
		return Admission{}, err
	}
	a := Admission{Scope: scope, Token: t, Floor: max(g.floors[scope], g.all)}
	if t < a.Floor {
		return a, &StaleError{Scope: scope, Token: t, Floor: a.Floor}
	}
	return a, nil
}

func (g *Guard) apply(a Admission) {
	if g.floors == nil {
		g.floors = make(map[string]Token)
	}
	if a.Token > g.floors[a.Scope] {
		g.floors[a.Scope] = a.Token
	}
}

// Check computes the admission of token t in scope without applying it. It
// returns a *StaleError (and the admission, whose Floor is the current floor)
// if t is below the floor, an error wrapping ErrInvalidToken or
// ErrInvalidScope for bad arguments, and nil otherwise.
//
// Check then Apply is the "persist, then apply" path of a durable layer: the
// caller must serialize the pair per scope itself (a mutex around
// check–persist–apply), or a lower token checked concurrently could pass
// before a higher one is applied. AdmitFunc does that serialization for you.
func (g *Guard) Check(scope string, t Token) (Admission, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.check(scope, t)
}

// Apply raises the floor of a.Scope to a.Token if that is higher. It never
// lowers a floor, so applying an old or replayed admission is harmless.
// Apply does not validate a; it is meant for admissions returned by Check
// and for restoring persisted floors.
func (g *Guard) Apply(a Admission) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.apply(a)
}

// Admit checks token t in scope and, if admitted, raises the floor, in one
// atomic step. Errors are those of Check.
func (g *Guard) Admit(scope string, t Token) (Admission, error) {
	return g.AdmitFunc(scope, t, nil)
}

// AdmitFunc is Admit with a commit step: if t is admitted, commit (when not
// nil) is called with the admission while the guard is locked, and the floor
// is raised only if commit returns nil. Persist the admission in commit
// (write and fsync) and the floor the guard shows is never ahead of what is on
// disk. commit is called for every admission, also those that do not raise
// the floor (check a.Raises()). An error from commit is returned as is.
//
// The guard stays locked during commit, for every scope: keep it short.
func (g *Guard) AdmitFunc(scope string, t Token, commit func(Admission) error) (Admission, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	a, err := g.check(scope, t)
	if err != nil {
		return a, err
	}
	if commit != nil {
		if err := commit(a); err != nil {
			return a, err
		}
	}
	g.apply(a)
	return a, nil
}

// RaiseAll raises the floor of every scope — those admitted so far and
// those never seen — to t if that is higher: from then on a token below t is
// stale in every scope. It never lowers a floor. It does not validate t; it
// is meant for a bound read from a log or given by a repair.
func (g *Guard) RaiseAll(t Token) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.all = max(g.all, t)
}

// FloorAll returns the floor of every scope set by RaiseAll, 0 if none.
func (g *Guard) FloorAll() Token {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.all
}

// Floor returns the floor of scope: the highest token admitted in it or
// FloorAll, whichever is higher; 0 if none.
func (g *Guard) Floor(scope string) Token {
	g.mu.Lock()
	defer g.mu.Unlock()
	return max(g.floors[scope], g.all)
}

// Floors returns a copy of every non-zero floor by scope, for the scopes
// that admitted a token (each at least FloorAll, which is not in the map).
func (g *Guard) Floors() map[string]Token {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := maps.Clone(g.floors)
	if m == nil {
		m = map[string]Token{}
	}
	for s, f := range m {
		m[s] = max(f, g.all)
	}
	return m
}
