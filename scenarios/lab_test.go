package scenarios

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/cluster"
	"github.com/coordkit/coordkit/scenarios/report"
)

func TestScenarioLabTimeline(t *testing.T) {
	t.Parallel()
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }
	m := func(n int64) report.Millis { return report.Millis(n * int64(time.Millisecond)) }
	ev := []cluster.Event{
		{AtNs: ms(10), Kind: cluster.EventState, Node: 1, State: "Candidate"},
		{AtNs: ms(12), Kind: cluster.EventState, Node: 1, State: "Leader", Term: 2},
		{AtNs: ms(20), Kind: cluster.EventFault, Detail: "partition 1|2,3"},
		{AtNs: ms(30), Kind: cluster.EventFault, Detail: "crash 3"},
		{AtNs: ms(40), Kind: cluster.EventHeal, Detail: "heal: all cuts removed"},
		{AtNs: ms(50), Kind: cluster.EventFault, Detail: "pause 2 for 0s"},
		{AtNs: ms(60), Kind: cluster.EventHeal, Detail: "resume 2"},
		{AtNs: ms(70), Kind: cluster.EventHeal, Detail: "restart 3"},
		{AtNs: ms(80), Kind: cluster.EventFault, Detail: "delay 1→2 5ms±0s"},
		{AtNs: ms(90), Kind: cluster.EventFault, Detail: "crash 1"},
	}
	recs := []cluster.Record{
		{Client: 0, Op: cluster.OpPut, Key: "k", Value: "v", CallNs: ms(1), ReturnNs: ms(2), Outcome: cluster.OutcomeOK, Node: 1},
		{Client: 1, Op: cluster.OpGet, Key: "k", Mode: cluster.ReadStale, CallNs: ms(3), ReturnNs: ms(4), Outcome: cluster.OutcomeFail, Error: "boom"},
	}
	tl := buildLabTimeline(ev, 100*time.Millisecond, 3, recs, map[int]string{0: "alice"})
	require.Len(t, tl.Lanes, 3)
	assert.Equal(t, []report.Span{
		{From: 0, To: m(10), State: report.StateFollower},
		{From: m(10), To: m(12), State: report.StateCandidate},
		{From: m(12), To: m(90), State: report.StateLeader},
		{From: m(90), To: m(100), State: report.StateDown},
	}, tl.Lanes[0].Spans)
	assert.Equal(t, []report.Span{
		{From: 0, To: m(50), State: report.StateFollower},
		{From: m(50), To: m(60), State: report.StatePaused},
		{From: m(60), To: m(100), State: report.StateFollower},
	}, tl.Lanes[1].Spans)
	assert.Equal(t, []report.Span{
		{From: 0, To: m(30), State: report.StateFollower},
		{From: m(30), To: m(70), State: report.StateDown},
		{From: m(70), To: m(100), State: report.StateFollower},
	}, tl.Lanes[2].Spans)
	assert.Equal(t, []report.Window{
		{From: m(20), To: m(40), Label: "partition 1|2,3"},
		{From: m(30), To: m(70), Label: "crash 3"},
		{From: m(50), To: m(60), Label: "pause 2 for 0s"},
		{From: m(90), To: m(100), Label: "crash 1"},
	}, tl.Faults)
	assert.Equal(t, []report.Mark{
		{At: m(12), Lane: "n1", Label: "leader, term 2"},
		{At: m(80), Label: "delay 1→2 5ms±0s"},
	}, tl.Marks)
	require.Len(t, tl.Ops, 2)
	assert.Equal(t, report.Op{Client: "alice", Desc: "put k=v at n1", Call: m(1), Return: m(2), Outcome: "ok"}, tl.Ops[0])
	assert.Equal(t, "client 1", tl.Ops[1].Client)
	assert.Equal(t, "get k → ? (stale): boom", tl.Ops[1].Desc)
}

func TestScenarioScale(t *testing.T) {
	t.Parallel()
	s, err := ParseScale("full")
	require.NoError(t, err)
	assert.Equal(t, 2, Pick(s, 1, 2))
	assert.Equal(t, 1, Pick(ScaleSmall, 1, 2))
	_, err = ParseScale("medium")
	assert.ErrorIs(t, err, ErrInvalid)
}
