package sweep

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeExp counts fixtures and trials; a point with a=bad fails to open, a
// seed of 13 errors.
type fakeExp struct {
	mu     sync.Mutex
	opened map[string]int
	closed int
	seeds  map[string][]int64
}

type fakeFix struct {
	e   *fakeExp
	key string
}

func (e *fakeExp) Open(_ context.Context, p Point) (Fixture, error) {
	if p["a"] == "bad" {
		return nil, errors.New("cannot open")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.opened[p.Key()]++
	return &fakeFix{e: e, key: p.Key()}, nil
}

func (f *fakeFix) Trial(_ context.Context, seed int64) (map[string]float64, error) {
	f.e.mu.Lock()
	defer f.e.mu.Unlock()
	f.e.seeds[f.key] = append(f.e.seeds[f.key], seed)
	if seed == 13 {
		return nil, errors.New("unlucky")
	}
	return map[string]float64{"m": float64(seed)}, nil
}

func (f *fakeFix) Close() error {
	f.e.mu.Lock()
	f.e.closed++
	f.e.mu.Unlock()
	return nil
}

func TestRunResume(t *testing.T) {
	for _, par := range []int{1, 3} {
		t.Run(fmt.Sprint("parallel ", par), func(t *testing.T) {
			s := Spec{Experiment: "e", Params: []Param{{"a", []string{"1", "2", "bad"}}}, Seeds: []int64{12, 13, 14}}
			exp := &fakeExp{opened: map[string]int{}, seeds: map[string][]int64{}}
			var file bytes.Buffer
			var progress bytes.Buffer
			prog := NewProgress(&progress, false, "t", len(s.Trials()), nil)
			res, err := Run(context.Background(), "e", exp, Pending(s, nil), Options{Parallel: par, Results: &file, Progress: prog})
			if err != nil {
				t.Fatal(err)
			}
			if len(res) != 9 || exp.opened["a=1"] != 1 || exp.opened["a=2"] != 1 || exp.closed != 2 {
				t.Fatalf("%d results, opened %v, closed %d; want 9, one fixture per good point, both closed", len(res), exp.opened, exp.closed)
			}
			if got := fmt.Sprint(exp.seeds["a=1"]); got != "[12 13 14]" {
				t.Errorf("seeds of a point ran %s, want in order", got)
			}
			if !strings.Contains(progress.String(), "9/9 (5 errors)") {
				t.Errorf("progress %q", progress.String())
			}
			// Resume: the file holds 4 measurements; 5 errored trials run again.
			old, err := ReadResults(&file)
			if err != nil || len(old) != 9 {
				t.Fatalf("results file: %d lines, %v", len(old), err)
			}
			pend := Pending(s, old)
			if len(pend) != 5 {
				t.Fatalf("%d pending after a run, want 5 (the errored ones)", len(pend))
			}
			res2, err := Run(context.Background(), "e", exp, pend, Options{Parallel: par})
			if err != nil || len(res2) != 5 || exp.opened["a=1"] != 2 {
				t.Errorf("resume: %d results, %v, opened %v", len(res2), err, exp.opened)
			}
			if got := fmt.Sprint(exp.seeds["a=1"]); got != "[12 13 14 13]" {
				t.Errorf("resume ran %s on a=1, want only seed 13 again", got)
			}
			if n := len(Latest(s, append(old, res2...))); n != 9 {
				t.Errorf("Latest over both runs: %d, want 9", n)
			}
		})
	}
}

func TestRunCancelled(t *testing.T) {
	s := Spec{Experiment: "e", Params: []Param{{"a", []string{"1", "2"}}}, Seeds: []int64{1, 2}}
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	exp := OpenFunc(func(context.Context, Point) (Fixture, error) {
		return TrialFunc(func(context.Context, int64) (map[string]float64, error) {
			n++
			if n == 2 {
				cancel()
			}
			return map[string]float64{"m": 1}, nil
		}), nil
	})
	res, err := Run(ctx, "e", exp, s.Trials(), Options{})
	if !errors.Is(err, context.Canceled) || len(res) != 1 {
		t.Errorf("cancelled run: %d results, %v; want the one before the cancel and context.Canceled", len(res), err)
	}
}
