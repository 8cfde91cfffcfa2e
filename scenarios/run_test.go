package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/scenarios/report"
)

// RunAll: a report per scenario, in order; one that could not be carried
// out gets a report saying so, with how long it ran (not "0s"); a skip is
// not a failure; progress names each and indents its own lines.
func TestRunAll(t *testing.T) {
	t.Parallel()
	const work = 50 * time.Millisecond
	r := NewRegistry()
	require.NoError(t, r.Register(Scenario{Name: "good", Summary: "good one", Claims: twoClaims, Run: func(ctx context.Context, env Env) (*report.Report, error) {
		env.Progressf("working on good")
		return judged(map[ClaimID]bool{"a": true, "b": true}, "a", "b")(ctx, env)
	}}))
	require.NoError(t, r.Register(Scenario{Name: "broken", Summary: "broken one", Claims: twoClaims, Run: func(context.Context, Env) (*report.Report, error) {
		<-time.After(work) // the work before the failure
		return nil, os.ErrPermission
	}}))
	require.NoError(t, r.Register(Scenario{Name: "skipped", Summary: "s", Claims: twoClaims, Run: func(context.Context, Env) (*report.Report, error) {
		return nil, errors.Join(ErrSkipped, errors.New("give --dsn"))
	}}))
	var progress bytes.Buffer
	reps, err := r.RunAll(context.Background(), []string{"good", "broken", "skipped"}, Env{Seed: 9, Scale: ScaleSmall}, &progress)
	require.NoError(t, err)
	require.Len(t, reps, 3)
	require.True(t, reps[0].Passed)
	broken := reps[1]
	require.False(t, broken.Passed)
	require.Equal(t, "broken one", broken.Summary)
	require.Equal(t, int64(9), broken.Seed)
	require.Equal(t, "small", broken.Scale)
	require.Contains(t, broken.Error, "permission denied")
	require.GreaterOrEqual(t, broken.Elapsed.D(), work)
	require.Empty(t, reps[2].Error)
	require.Contains(t, reps[2].Skipped, "give --dsn")
	p := progress.String()
	require.Contains(t, p, "scenario good: running (seed 9, scale small)\n  working on good\nscenario good: PASS in ")
	require.Contains(t, p, "scenario broken: scenario broken: permission denied\nscenario broken: FAIL in ")
	require.NotContains(t, p, "FAIL in 0s")
	require.Contains(t, p, "scenario skipped: SKIPPED in ")
}

// A run cut short proves nothing either way: no report for it, an
// *InterruptedError naming it.
func TestRunAllInterrupted(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	require.NoError(t, r.Register(Scenario{Name: "slow", Summary: "s", Claims: twoClaims, Run: func(ctx context.Context, _ Env) (*report.Report, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	reps, err := r.RunAll(ctx, []string{"slow"}, Env{}, nil)
	require.Empty(t, reps)
	var ie *InterruptedError
	require.ErrorAs(t, err, &ie)
	require.Equal(t, "slow", ie.Name)
	require.EqualError(t, err, "scenario slow: interrupted")
	require.ErrorIs(t, err, context.Canceled)
}

// WriteHTMLFile writes the page whole, titled by its one report or as
// several, and leaves no temporary file behind.
func TestWriteHTMLFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	one := filepath.Join(dir, "one.html")
	a, b := report.New("alpha", ""), report.New("beta", "")
	a.Finish()
	b.Finish()
	require.NoError(t, report.WriteHTMLFile(one, []*report.Report{a}))
	page, err := os.ReadFile(one)
	require.NoError(t, err)
	require.Contains(t, string(page), "<title>coordkit scenario alpha</title>")
	two := filepath.Join(dir, "two.html")
	require.NoError(t, report.WriteHTMLFile(two, []*report.Report{a, b}))
	page, err = os.ReadFile(two)
	require.NoError(t, err)
	require.Contains(t, string(page), "<title>coordkit scenarios</title>")
	left, err := filepath.Glob(filepath.Join(dir, "*.tmp"))
	require.NoError(t, err)
	require.Empty(t, left)
	require.Error(t, report.WriteHTMLFile(filepath.Join(dir, "no", "such", "dir.html"), []*report.Report{a}))
}

func TestIndent(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	w := Indent(&b, "  ")
	n, err := w.Write([]byte("one\n"))
	require.NoError(t, err)
	require.Equal(t, 4, n, "the bytes given, not the bytes written")
	_, _ = w.Write([]byte("two\n"))
	require.Equal(t, "  one\n  two\n", b.String())
}

func TestSelect(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	for _, n := range []string{"zeta", "alpha"} {
		require.NoError(t, r.Register(Scenario{Name: n, Summary: n + " summary", Claims: twoClaims, Run: judged(nil)}))
	}
	names, err := r.Select("", true)
	require.NoError(t, err)
	require.Equal(t, []string{"zeta", "alpha"}, names, "all, in registration order")
	names, err = r.Select("alpha", false)
	require.NoError(t, err)
	require.Equal(t, []string{"alpha"}, names)
	_, err = r.Select("alpha", true)
	require.ErrorIs(t, err, ErrNameAndAll)
	_, err = r.Select("", false)
	require.ErrorIs(t, err, ErrNoName)
	_, err = r.Select("beta", false)
	require.ErrorIs(t, err, ErrUnknownScenario)
	require.EqualError(t, err, `unknown scenario "beta"; scenarios are: alpha, zeta`)

	l := r.Listing()
	require.Equal(t, Listing{{"zeta", "zeta summary"}, {"alpha", "alpha summary"}}, l)
	var b strings.Builder
	require.NoError(t, l.WriteText(&b))
	require.Equal(t, "zeta   zeta summary\nalpha  alpha summary\n", b.String())
	js, err := json.Marshal(NewRegistry().Listing())
	require.NoError(t, err)
	require.Equal(t, "[]", string(js), "an empty listing is an empty array")
}

// Results: one report or all, as text and JSON; Failed names the reports
// that neither passed nor were skipped.
func TestResults(t *testing.T) {
	t.Parallel()
	pass, fail, skip := report.New("pass", ""), report.New("fail", ""), report.New("skip", "")
	pass.Check("c", "1", "1", true)
	fail.Check("c", "1", "2", false)
	skip.Skipped = "no server"
	for _, r := range []*report.Report{pass, fail, skip} {
		r.Finish()
	}
	one := report.Results{Reports: []*report.Report{pass}}
	b, err := json.Marshal(one)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(b), `{"name":"pass"`), string(b))
	all := report.Results{Reports: []*report.Report{pass, fail, skip}, All: true}
	b, err = json.Marshal(all)
	require.NoError(t, err)
	var arr []map[string]any
	require.NoError(t, json.Unmarshal(b, &arr))
	require.Len(t, arr, 3)
	require.Equal(t, []string{"fail"}, all.Failed())
	require.Empty(t, one.Failed())
	var text strings.Builder
	require.NoError(t, one.WriteText(&text))
	require.True(t, strings.HasPrefix(text.String(), "PASS  pass\n"), text.String())
}
