package safety

import (
	"context"
	"fmt"
	"io"
)

// DefaultShrinkRuns is how many times Shrink runs each candidate schedule
// (at most: it stops at the first run that still fails). Timing is not
// deterministic — which client holds the lock when a freeze fires, when
// etcd elects — so one passing run does not show that a candidate has
// lost the failure.
const DefaultShrinkRuns = 3

// Attempt is one candidate schedule Shrink tried.
type Attempt struct {
	// Steps are the candidate's steps, as numbers (from 1) in the schedule
	// Shrink started from.
	Steps []int `json:"steps"`
	// Runs is how many runs it took (up to the first that failed).
	Runs   int  `json:"runs"`
	Failed bool `json:"failed"`
}

// ShrinkResult is a shrunk schedule and how it was found.
type ShrinkResult struct {
	// Steps is the smallest failing schedule found: no single step can be
	// left out without every one of the runs of the smaller candidate
	// passing (1-minimal, as delta debugging promises).
	Steps []Step `json:"steps"`
	// Numbers are Steps' numbers in the original schedule, from 1.
	Numbers  []int     `json:"numbers"`
	Attempts []Attempt `json:"attempts"`
	Runs     int       `json:"runs"` // runs in all
}

// Shrink delta-debugs steps (Zeller's ddmin) to a smallest subsequence
// for which fails still reports a failure. fails runs one check of a
// candidate; each candidate gets up to runs runs (DefaultShrinkRuns when
// runs < 1) and counts as still failing if any run fails. The candidates
// keep the original order; fails decides their timing (Compact). Shrink
// does not re-check steps itself: the caller has seen it fail.
//
// Progress, when not nil, gets a line per candidate.
func Shrink(ctx context.Context, steps []Step, runs int, progress io.Writer, fails func(ctx context.Context, steps []Step) (bool, error)) (ShrinkResult, error) {
	if runs < 1 {
		runs = DefaultShrinkRuns
	}
	res := ShrinkResult{}
	cur := make([]int, len(steps))
	for i := range cur {
		cur[i] = i
	}
	try := func(idx []int) (bool, error) {
		cand := make([]Step, len(idx))
		nums := make([]int, len(idx))
		for i, j := range idx {
			cand[i], nums[i] = steps[j], j+1
		}
		a := Attempt{Steps: nums}
		for a.Runs < runs {
			if err := ctx.Err(); err != nil {
				return false, err
			}
			a.Runs++
			res.Runs++
			f, err := fails(ctx, cand)
			if err != nil {
				return false, err
			}
			if f {
				a.Failed = true
				break
			}
		}
		res.Attempts = append(res.Attempts, a)
		if progress != nil {
			verdict := "passes"
			if a.Failed {
				verdict = "still fails"
			}
			fmt.Fprintf(progress, "shrink: %d of %d steps %v: %s (%d run(s))\n", len(idx), len(steps), nums, verdict, a.Runs)
		}
		return a.Failed, nil
	}
	n := 2
	for len(cur) >= 2 {
		chunks := split(cur, n)
		reduced := false
		for _, c := range chunks {
			f, err := try(c)
			if err != nil {
				return res.with(steps, cur), err
			}
			if f {
				cur, n, reduced = c, 2, true
				break
			}
		}
		if !reduced && n > 2 {
			for i := range chunks {
				comp := complement(chunks, i)
				f, err := try(comp)
				if err != nil {
					return res.with(steps, cur), err
				}
				if f {
					cur, n, reduced = comp, max(n-1, 2), true
					break
				}
			}
		}
		if !reduced {
			if n >= len(cur) {
				break
			}
			n = min(2*n, len(cur))
		}
	}
	if len(cur) == 1 && len(steps) > 1 {
		// ddmin never tries the empty schedule; a failure without faults
		// would say the faults are not the cause.
		f, err := try(nil)
		if err != nil {
			return res.with(steps, cur), err
		}
		if f {
			cur = nil
		}
	}
	return res.with(steps, cur), nil
}

func (r ShrinkResult) with(steps []Step, idx []int) ShrinkResult {
	r.Steps, r.Numbers = make([]Step, len(idx)), make([]int, len(idx))
	for i, j := range idx {
		r.Steps[i], r.Numbers[i] = steps[j], j+1
	}
	return r
}

// split cuts s into n nearly equal consecutive chunks (n <= len(s)).
func split(s []int, n int) [][]int {
	var out [][]int
	start := 0
	for i := range n {
		end := start + (len(s)-start)/(n-i)
		out = append(out, s[start:end])
		start = end
	}
	return out
}

// complement is every chunk but chunks[skip], in order.
func complement(chunks [][]int, skip int) []int {
	var out []int
	for i, c := range chunks {
		if i != skip {
			out = append(out, c...)
		}
	}
	return out
}
