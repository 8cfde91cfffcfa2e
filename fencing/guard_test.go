package fencing

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"pgregory.net/rapid"
)

func TestGuardAdmitsAtOrAboveFloor(t *testing.T) {
	var g Guard // the zero value works
	steps := []struct {
		scope   string
		tok     Token
		admit   bool
		floorAt Token // floor after the step
	}{
		{"a", 5, true, 5},
		{"a", 5, true, 5}, // equal passes
		{"a", 4, false, 5},
		{"b", 1, true, 1}, // scopes are independent
		{"a", 9, true, 9},
		{"a", 6, false, 9},
		{"b", 2, true, 2},
	}
	for i, s := range steps {
		a, err := g.Admit(s.scope, s.tok)
		if s.admit != (err == nil) {
			t.Fatalf("step %d: Admit(%q, %d) err = %v, want admitted=%v", i, s.scope, s.tok, err, s.admit)
		}
		if !s.admit {
			var se *StaleError
			if !errors.As(err, &se) || !errors.Is(err, ErrStale) {
				t.Fatalf("step %d: error %v is not a *StaleError matching ErrStale", i, err)
			}
			if se.Scope != s.scope || se.Token != s.tok || se.Floor != s.floorAt {
				t.Fatalf("step %d: StaleError %+v", i, *se)
			}
			if a.Floor != s.floorAt {
				t.Fatalf("step %d: admission floor %d", i, a.Floor)
			}
		}
		if f := g.Floor(s.scope); f != s.floorAt {
			t.Fatalf("step %d: floor %d, want %d", i, f, s.floorAt)
		}
	}
	if got := g.Floors(); len(got) != 2 || got["a"] != 9 || got["b"] != 2 {
		t.Fatalf("Floors() = %v", got)
	}
}

func TestGuardRejectsBadArguments(t *testing.T) {
	var g Guard
	if _, err := g.Admit("a", 0); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("token 0: %v", err)
	}
	if _, err := g.Admit("a", MaxToken+1); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("token above max: %v", err)
	}
	if _, err := g.Admit("", 1); !errors.Is(err, ErrInvalidScope) {
		t.Fatalf("empty scope: %v", err)
	}
	if len(g.Floors()) != 0 {
		t.Fatal("a rejected argument changed a floor")
	}
}

func TestGuardCheckDoesNotApply(t *testing.T) {
	var g Guard
	a, err := g.Check("s", 7)
	if err != nil || !a.Raises() || a.NewFloor() != 7 {
		t.Fatalf("Check = %+v, %v", a, err)
	}
	if g.Floor("s") != 0 {
		t.Fatal("Check applied the admission")
	}
	g.Apply(a)
	if g.Floor("s") != 7 {
		t.Fatal("Apply did not raise the floor")
	}
	g.Apply(Admission{Scope: "s", Token: 3}) // an old admission replayed late
	if g.Floor("s") != 7 {
		t.Fatal("Apply lowered the floor")
	}
	if a, _ := g.Check("s", 7); a.Raises() {
		t.Fatal("an equal token claims to raise the floor")
	}
}

func TestGuardAdmitFuncCommitsBeforeApplying(t *testing.T) {
	var g Guard
	boom := errors.New("disk full")
	_, err := g.AdmitFunc("s", 4, func(a Admission) error {
		if g.floors["s"] != 0 { // the guard is locked: read the field, not Floor()
			t.Error("floor raised before commit")
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("AdmitFunc = %v, want the commit error", err)
	}
	if g.Floor("s") != 0 {
		t.Fatal("floor raised although the commit failed")
	}
	var seen []Admission
	if _, err := g.AdmitFunc("s", 4, func(a Admission) error { seen = append(seen, a); return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := g.AdmitFunc("s", 2, func(a Admission) error { seen = append(seen, a); return nil }); !errors.Is(err, ErrStale) {
		t.Fatalf("stale token: %v", err)
	}
	if len(seen) != 1 || seen[0] != (Admission{Scope: "s", Token: 4}) || g.Floor("s") != 4 {
		t.Fatalf("commits %v, floor %d", seen, g.Floor("s"))
	}
}

// TestGuardPropertySequential: against a model, any sequence of admits
// admits a token iff it is ≥ the floor at that moment, and floors never go down.
func TestGuardPropertySequential(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var g Guard
		model := map[string]Token{}
		scopes := []string{"a", "b", "c"}
		n := rapid.IntRange(1, 200).Draw(t, "n")
		for i := 0; i < n; i++ {
			scope := rapid.SampledFrom(scopes).Draw(t, "scope")
			tok := Token(rapid.Uint64Range(1, 30).Draw(t, "token"))
			useCheck := rapid.Bool().Draw(t, "checkThenApply")
			before := g.Floor(scope)
			if before != model[scope] {
				t.Fatalf("floor %d, model %d", before, model[scope])
			}
			var a Admission
			var err error
			if useCheck {
				a, err = g.Check(scope, tok)
				if err == nil {
					g.Apply(a)
				}
			} else {
				a, err = g.Admit(scope, tok)
			}
			if admitted := err == nil; admitted != (tok >= model[scope]) {
				t.Fatalf("token %d with floor %d: admitted=%v", tok, model[scope], admitted)
			}
			if a.Floor != model[scope] {
				t.Fatalf("admission floor %d, model %d", a.Floor, model[scope])
			}
			if err == nil {
				model[scope] = max(model[scope], tok)
			}
			if g.Floor(scope) < before {
				t.Fatalf("floor went down from %d to %d", before, g.Floor(scope))
			}
		}
	})
}

type admitResult struct {
	tok   Token
	floor Token // floor the admission saw
	ok    bool
}

// TestGuardPropertyConcurrent: goroutines admit concurrently. Every result
// must be consistent with the floor it saw, the floors each goroutine sees
// never go down, and the final floor is the highest admitted token.
func TestGuardPropertyConcurrent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var g Guard
		scopes := []string{"a", "b"}
		workers := rapid.IntRange(2, 6).Draw(t, "workers")
		plans := make([][]struct {
			scope string
			tok   Token
		}, workers)
		for w := range plans {
			n := rapid.IntRange(1, 40).Draw(t, fmt.Sprintf("ops%d", w))
			for range n {
				plans[w] = append(plans[w], struct {
					scope string
					tok   Token
				}{rapid.SampledFrom(scopes).Draw(t, "scope"), Token(rapid.Uint64Range(1, 50).Draw(t, "token"))})
			}
		}
		results := make([]map[string][]admitResult, workers)
		var wg sync.WaitGroup
		for w := range plans {
			results[w] = map[string][]admitResult{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for _, op := range plans[w] {
					a, err := g.Admit(op.scope, op.tok)
					results[w][op.scope] = append(results[w][op.scope], admitResult{op.tok, a.Floor, err == nil})
				}
			}()
		}
		wg.Wait()
		for _, scope := range scopes {
			var highest Token
			admittedFloors := map[Token]bool{0: true}
			var all []admitResult
			for w := range results {
				var seen Token // floor as this goroutine last saw it (after its own op)
				for _, r := range results[w][scope] {
					if r.floor < seen {
						t.Fatalf("worker %d saw the floor of %q go down: %d after %d", w, scope, r.floor, seen)
					}
					if r.ok != (r.tok >= r.floor) {
						t.Fatalf("token %d at floor %d: admitted=%v", r.tok, r.floor, r.ok)
					}
					seen = r.floor
					if r.ok {
						highest = max(highest, r.tok)
						admittedFloors[r.tok] = true
						seen = max(r.floor, r.tok)
					}
					all = append(all, r)
				}
			}
			if g.Floor(scope) != highest {
				t.Fatalf("final floor of %q is %d, highest admitted token %d", scope, g.Floor(scope), highest)
			}
			for _, r := range all {
				if !admittedFloors[r.floor] {
					t.Fatalf("an admission saw floor %d, which no admitted token set", r.floor)
				}
				if !r.ok && r.tok >= highest {
					t.Fatalf("token %d rejected though the final floor is only %d", r.tok, highest)
				}
			}
		}
	})
}

// RaiseAll sets a floor for every scope, those admitted and those never
// seen; a scope's own higher floor stays, nothing goes down.
func TestGuardRaiseAll(t *testing.T) {
	var g Guard
	if _, err := g.Admit("high", 50); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Admit("low", 5); err != nil {
		t.Fatal(err)
	}
	g.RaiseAll(20)
	g.RaiseAll(10) // never lowers
	for _, tc := range []struct {
		scope string
		tok   Token
		stale bool
		floor Token
	}{
		{"low", 19, true, 20},
		{"never/seen", 19, true, 20},
		{"high", 49, true, 50},
		{"never/seen", 20, false, 20},
	} {
		a, err := g.Check(tc.scope, tc.tok)
		var se *StaleError
		if stale := errors.As(err, &se); stale != tc.stale || a.Floor != tc.floor {
			t.Errorf("Check(%q, %d) = %+v, %v; want stale %v at floor %d", tc.scope, tc.tok, a, err, tc.stale, tc.floor)
		}
	}
	if a, _ := g.Check("never/seen", 20); a.Raises() {
		t.Error("a token equal to the floor of every scope raises nothing that must be persisted")
	}
	if got := g.Floors(); got["low"] != 20 || got["high"] != 50 || len(got) != 2 || g.FloorAll() != 20 {
		t.Errorf("Floors() = %v, FloorAll() = %d", got, g.FloorAll())
	}
}
