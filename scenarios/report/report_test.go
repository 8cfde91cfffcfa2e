package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/chart"
	"github.com/coordkit/coordkit/scenarios/report/reporttest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func ms(n float64) Millis { return Millis(time.Duration(n * float64(time.Millisecond))) }

// fixture is a fixed report that exercises every part of the model.
func fixture() *Report {
	r := New("quorum-demo", "3 nodes, 2 crashed: writes stop, then resume.")
	r.Seed = 42
	r.Scale = "small"
	r.Elapsed = ms(2345)
	r.Check("writes stop without a quorum", "error within 2s", "error after 1.2s", true)
	r.Check("no acknowledged write is lost", "41 of 41 present", "40 of 41 present", false)
	r.Metric("write_p50_ms", 1.25, "ms")
	r.Metric("writes_acked", 41, "")
	r.AddTable(Table{Title: "Quorum by size", Columns: []string{"N", "quorum", "tolerates"}, Rows: [][]string{{"3", "2", "1"}, {"5", "3", "2"}}})
	r.Timeline = &Timeline{
		End: ms(1000),
		Lanes: []Lane{
			{Name: "n1", Spans: []Span{{From: 0, To: ms(400), State: StateLeader}, {From: ms(400), To: ms(1000), State: StateDown}}},
			{Name: "n2", Spans: []Span{{From: 0, To: ms(500), State: StateFollower}, {From: ms(500), To: ms(600), State: StateCandidate}, {From: ms(600), To: ms(1000), State: StateLeader}}},
		},
		Faults: []Window{{From: ms(400), To: ms(700), Label: "crash n1 <&>"}},
		Ops: []Op{
			{Client: "alice", Desc: "put x=1", Call: ms(100), Return: ms(110), Outcome: OutcomeOK},
			{Client: "alice", Desc: "put x=2", Call: ms(450), Return: ms(650), Outcome: OutcomeFail},
			{Client: "bob", Desc: "get x → 1", Call: ms(460), Return: ms(900), Outcome: OutcomeUnknown},
			{Client: "bob", Desc: "get x → 1 (overlap)", Call: ms(470), Return: ms(480), Outcome: OutcomeOK},
		},
		Marks: []Mark{{At: ms(600), Lane: "n2", Label: "elected, term 2"}, {At: ms(700), Label: "healed"}},
	}
	r.AddChart(chart.Chart{Title: "Write latency", XLabel: "one-way delay (ms)", YLabel: "latency (ms)", Series: []chart.Series{
		{Name: "p50", Points: []chart.Point{{X: 0.5, Y: 1.2}, {X: 10, Y: 21}, {X: 50, Y: 101.5}}},
		{Name: "model", Dashed: true, Points: []chart.Point{{X: 0.5, Y: 1}, {X: 10, Y: 20}, {X: 50, Y: 100}}},
	}})
	r.AddChart(chart.Chart{Title: "Read cost by mode", YLabel: "µs", Categories: []string{"stale", "lease", "readindex"}, Series: []chart.Series{
		{Name: "p50", Points: []chart.Point{{X: 0, Y: 5}, {X: 1, Y: 6}, {X: 2, Y: 900}}},
	}})
	r.Note("fsync was %s", "off")
	r.Finish()
	return r
}

func TestReportFinish(t *testing.T) {
	r := New("x", "")
	r.Finish()
	assert.False(t, r.Passed, "no claims is not a pass")
	r.Check("a", "1", "1", true)
	r.Finish()
	assert.True(t, r.Passed)
	r.Check("b", "1", "2", false)
	r.Finish()
	assert.False(t, r.Passed)
	assert.Len(t, r.Failed(), 1)
}

func TestReportTextGolden(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteText(&buf, fixture()))
	golden(t, "fixture.txt", buf.Bytes())
}

func TestReportTextAllGolden(t *testing.T) {
	a := New("a", "first")
	a.Check("one", "x", "x", true)
	a.Check("two", "y", "y", true)
	a.Finish()
	var buf bytes.Buffer
	require.NoError(t, WriteTextAll(&buf, []*Report{a, fixture()}))
	golden(t, "all.txt", buf.Bytes())
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create %s", path)
	assert.Equal(t, string(want), string(got))
}

func TestReportJSONContract(t *testing.T) {
	b, err := json.Marshal(fixture())
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	for _, k := range []string{"name", "passed", "seed", "claims", "metrics"} {
		assert.Contains(t, m, k)
	}
	assert.Equal(t, map[string]any{"write_p50_ms": 1.25, "writes_acked": 41.0}, m["metrics"])
	claims := m["claims"].([]any)
	require.Len(t, claims, 2)
	assert.Equal(t, map[string]any{"claim": "writes stop without a quorum", "expected": "error within 2s", "observed": "error after 1.2s", "holds": true}, claims[0])
	assert.Contains(t, string(b), `"metrics":{"write_p50_ms":1.25,"writes_acked":41}`, "metrics keep their recorded order")

	var back Report
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, fixture().Claims, back.Claims)
	assert.Equal(t, fixture().Timeline, back.Timeline)
	v, ok := back.Metrics.Get("writes_acked")
	assert.True(t, ok)
	assert.Equal(t, 41.0, v)
}

func TestReportEmptyMetricsEncodeAsObject(t *testing.T) {
	b, err := json.Marshal(New("x", ""))
	require.NoError(t, err)
	assert.Contains(t, string(b), `"metrics":{}`)
	assert.Contains(t, string(b), `"claims":[]`)
}

func TestReportHTMLWellFormedAndSelfContained(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteHTML(&buf, "coordkit <scenarios>", []*Report{fixture(), New("empty", "")}))
	reporttest.CheckHTML(t, buf.Bytes())
	s := buf.String()
	assert.Contains(t, s, "<svg")
	assert.Contains(t, s, "crash n1 &lt;&amp;&gt;", "labels are escaped")
	assert.Contains(t, s, "polyline", "the line chart is drawn")
	assert.Contains(t, s, "stroke-dasharray=\"6,4\"", "the model series is dashed")
}

func TestReportRecorder(t *testing.T) {
	base := time.Unix(0, 0)
	now := base
	clock := func() time.Time { return now }
	rec := NewRecorder(clock)
	rec.State("n1", StateLeader)
	rec.State("n2", StateFollower)
	now = base.Add(100 * time.Millisecond)
	rec.State("n1", StateLeader) // no-op
	rec.FaultStart("crash n1")
	rec.State("n1", StateDown)
	rec.Mark("n1", "crashed")
	now = base.Add(300 * time.Millisecond)
	rec.FaultEnd("crash n1")
	rec.State("n1", StateFollower)
	rec.Op("alice", "put x=1", base.Add(50*time.Millisecond), base.Add(60*time.Millisecond), OutcomeOK)
	rec.FaultStart("partition")
	now = base.Add(500 * time.Millisecond)
	tl := rec.Timeline()
	assert.Equal(t, ms(500), tl.End)
	require.Len(t, tl.Lanes, 2)
	assert.Equal(t, []Span{{0, ms(100), StateLeader}, {ms(100), ms(300), StateDown}, {ms(300), ms(500), StateFollower}}, tl.Lanes[0].Spans)
	assert.Equal(t, []Span{{0, ms(500), StateFollower}}, tl.Lanes[1].Spans)
	assert.Equal(t, []Window{{ms(100), ms(300), "crash n1"}, {ms(300), ms(500), "partition"}}, tl.Faults)
	assert.Equal(t, []Mark{{ms(100), "n1", "crashed"}}, tl.Marks)
	assert.Equal(t, []Op{{"alice", "put x=1", ms(50), ms(60), OutcomeOK}}, tl.Ops)
}

func TestReportMarksTimingClaims(t *testing.T) {
	r := New("x", "")
	r.Claims = append(r.Claims, Claim{ID: "fast", Kind: "timing", Claim: "it is fast", Holds: false},
		Claim{ID: "safe", Kind: "safety", Claim: "it is safe", Holds: true})
	var text, page bytes.Buffer
	require.NoError(t, WriteText(&text, r))
	assert.Contains(t, text.String(), "✗ it is fast (timing)")
	assert.Contains(t, text.String(), "✓ it is safe\n")
	require.NoError(t, WriteHTML(&page, "x", []*Report{r}))
	assert.Contains(t, page.String(), "it is fast (timing)</td>")
}

func TestReportRecorderSteps(t *testing.T) {
	base := time.Unix(0, 0)
	now := base
	rec := NewRecorder(func() time.Time { return now })
	rec.Heading("1. A takes the lock")
	now = base.Add(20 * time.Millisecond)
	rec.Step("A", "acquired", "holds it", 7)
	rec.Explain("why")
	assert.Equal(t, []Step{
		{At: 0, Actor: "-", Event: EventHeading, Text: "1. A takes the lock"},
		{At: ms(20), Actor: "A", Event: "acquired", Text: "holds it", Token: 7},
		{At: ms(20), Actor: "-", Event: EventExplain, Text: "why"},
	}, rec.Steps())
	b, err := json.Marshal(rec.Steps()[1])
	require.NoError(t, err)
	assert.JSONEq(t, `{"at_ms":20,"actor":"A","event":"acquired","text":"holds it","token":7}`, string(b))
}
