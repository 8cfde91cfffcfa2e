package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"
)

// Fixture is what one point's trials run on (a cluster, a check's setup).
// Trial runs one seed and returns the measured metrics; an error means the
// trial could not measure (it is recorded and run again on resume).
type Fixture interface {
	Trial(ctx context.Context, seed int64) (map[string]float64, error)
	Close() error
}

// Experiment opens the fixture for a point. A point's values are strings
// as the spec gives them: the experiment parses them and says what is
// wrong (returned as the error of every trial of the point).
type Experiment interface {
	Open(ctx context.Context, p Point) (Fixture, error)
}

// OpenFunc adapts a function to Experiment.
type OpenFunc func(ctx context.Context, p Point) (Fixture, error)

// Open calls f.
func (f OpenFunc) Open(ctx context.Context, p Point) (Fixture, error) { return f(ctx, p) }

// TrialFunc is a Fixture with nothing to set up or close: each trial runs
// on its own.
type TrialFunc func(ctx context.Context, seed int64) (map[string]float64, error)

// Trial calls f.
func (f TrialFunc) Trial(ctx context.Context, seed int64) (map[string]float64, error) {
	return f(ctx, seed)
}

// Close does nothing.
func (TrialFunc) Close() error { return nil }

// Options drive Run.
type Options struct {
	// Parallel is how many points run at once (a point's trials always run
	// in order on its fixture). Zero or less: 1.
	Parallel int
	// Results receives one JSON line per finished trial (the resumable
	// results file). Nil: not written.
	Results io.Writer
	// Progress receives the progress line; nil: none.
	Progress *Progress
	// Now is the clock for elapsed times; nil: time.Now.
	Now func() time.Time
}

// Run runs the trials (usually Pending(spec, old)) of experiment exp, name
// being the experiment's name recorded in each result, and returns their
// results in the order they finished. It stops early only when ctx ends,
// returning the results so far and ctx's error.
func Run(ctx context.Context, name string, exp Experiment, trials []Trial, opts Options) ([]Result, error) {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	// Group by point, keeping the order of first appearance.
	var order []string
	groups := map[string][]Trial{}
	for _, t := range trials {
		k := t.Point.Key()
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], t)
	}
	var (
		mu      sync.Mutex
		results []Result
		werr    error
	)
	record := func(r Result) {
		mu.Lock()
		defer mu.Unlock()
		results = append(results, r)
		if opts.Results != nil && werr == nil {
			b, _ := json.Marshal(r)
			_, werr = opts.Results.Write(append(b, '\n'))
		}
		opts.Progress.Step(r.Error != "")
	}
	work := make(chan []Trial)
	var wg sync.WaitGroup
	for range max(opts.Parallel, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ts := range work {
				runPoint(ctx, name, exp, ts, now, record)
			}
		}()
	}
feed:
	for _, k := range order {
		select {
		case work <- groups[k]:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	opts.Progress.Done()
	if werr != nil {
		return results, fmt.Errorf("sweep: writing results: %w", werr)
	}
	return results, ctx.Err()
}

// runPoint opens the point's fixture and runs its trials in order.
func runPoint(ctx context.Context, name string, exp Experiment, ts []Trial, now func() time.Time, record func(Result)) {
	fix, err := exp.Open(ctx, ts[0].Point)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		for _, t := range ts {
			record(Result{Experiment: name, Point: t.Point, Seed: t.Seed, Error: err.Error()})
		}
		return
	}
	defer fix.Close()
	for _, t := range ts {
		if ctx.Err() != nil {
			return
		}
		start := now()
		m, err := fix.Trial(ctx, t.Seed)
		if ctx.Err() != nil {
			return // cut short by the caller: not a result
		}
		r := Result{Experiment: name, Point: t.Point, Seed: t.Seed, Metrics: m, ElapsedMs: float64(now().Sub(start).Microseconds()) / 1000}
		if err != nil {
			r.Error, r.Metrics = err.Error(), nil
		}
		record(r)
	}
}
