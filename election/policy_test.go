package election

import (
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"pgregory.net/rapid"

	"github.com/coordkit/coordkit/fencing"
)

// ours and foreign build queue entries for the tests.
func ours(tok fencing.Token, id string, prio int64, ver string, p Policy) Candidate {
	return Candidate{Key: fmt.Sprintf("e/%x", tok), Token: tok, Value: id,
		Attributes: &Attributes{ID: id, Priority: prio, Version: ver}, Policy: p.orDefault()}
}

func foreign(tok fencing.Token) Candidate {
	return Candidate{Key: fmt.Sprintf("e/%x", tok), Token: tok, Value: "etcdctl"}
}

func queue(cs ...Candidate) view {
	for i := range cs {
		cs[i].Leader = i == 0
	}
	return view{Queue: cs}
}

func TestParsePolicy(t *testing.T) {
	for _, p := range Policies {
		got, err := ParsePolicy(string(p))
		if err != nil || got != p {
			t.Fatalf("ParsePolicy(%q) = %q, %v", p, got, err)
		}
	}
	if got, err := ParsePolicy(""); err != nil || got != PolicyFirstCome {
		t.Fatalf(`ParsePolicy("") = %q, %v`, got, err)
	}
	if _, err := ParsePolicy("random"); err == nil {
		t.Fatal("ParsePolicy(random) accepted")
	}
}

func TestBest(t *testing.T) {
	pr, nv, ov := PolicyPriority, PolicyNewestVersion, PolicyOldestVersion
	cases := []struct {
		name   string
		p      Policy
		q      view
		except fencing.Token
		want   string // "" for none
	}{
		{"priority highest", pr, queue(ours(1, "a", 1, "", pr), ours(2, "b", 5, "", pr), ours(3, "c", 3, "", pr)), 0, "b"},
		{"priority tie by arrival", pr, queue(ours(1, "a", 1, "", pr), ours(2, "b", 5, "", pr), ours(3, "c", 5, "", pr)), 0, "b"},
		{"priority except", pr, queue(ours(1, "a", 9, "", pr), ours(2, "b", 5, "", pr)), 1, "b"},
		{"foreign never best", pr, queue(foreign(1), ours(2, "b", -5, "", pr)), 0, "b"},
		{"only foreign", pr, queue(foreign(1), foreign(2)), 0, ""},
		{"first-come is arrival", PolicyFirstCome, queue(ours(1, "a", 1, "", ""), ours(2, "b", 5, "", "")), 0, "a"},
		{"newest version", nv, queue(ours(1, "a", 0, "1.2.0", nv), ours(2, "b", 0, "1.10.0", nv), ours(3, "c", 0, "1.10.0-rc.1", nv)), 0, "b"},
		{"newest ties by priority", nv, queue(ours(1, "a", 0, "2.0.0", nv), ours(2, "b", 3, "2.0.0", nv)), 0, "b"},
		{"newest invalid never preferred", nv, queue(ours(1, "a", 0, "latest", nv), ours(2, "b", 0, "0.0.1", nv)), 0, "b"},
		{"oldest version", ov, queue(ours(1, "a", 0, "1.10.0", ov), ours(2, "b", 0, "1.2.0", ov), ours(3, "c", 0, "1.9.0", ov)), 0, "b"},
		{"oldest invalid never preferred", ov, queue(ours(1, "a", 0, "", ov), ours(2, "b", 0, "9.0.0", ov)), 0, "b"},
		{"oldest tie by arrival", ov, queue(ours(1, "a", 0, "1.0.0", ov), ours(2, "b", 0, "1.0.0", ov)), 0, "a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, ok := Preference{Policy: tc.p}.Best(tc.q.Queue, tc.except)
			if got := ""; ok {
				got = b.ID()
				if got != tc.want {
					t.Fatalf("best %q, want %q", got, tc.want)
				}
			} else if tc.want != "" {
				t.Fatalf("no best, want %q", tc.want)
			}
		})
	}
}

func TestNext(t *testing.T) {
	pr := PolicyPriority
	prio := Preference{Policy: pr}
	ho := func(v view, from, to fencing.Token) view {
		v.handover = &handover{FromToken: from, ToToken: to}
		return v
	}
	base := queue(ours(1, "a", 1, "", pr), ours(2, "b", 1, "", pr), ours(3, "c", 1, "", pr), ours(4, "d", 9, "", pr))
	cases := []struct {
		name   string
		pref   Preference
		v      view
		me     fencing.Token
		want   action
		target string
	}{
		{"leader yields to a better one", prio, base, 1, actYield, "d"},
		{"no-preempt leader stays", Preference{Policy: pr, NoPreempt: true}, base, 1, actLead, ""},
		{"first-come leader stays", Preference{}, base, 1, actLead, ""},
		{"best leader stays", prio, queue(ours(1, "a", 9, "", pr), ours(2, "b", 9, "", pr)), 1, actLead, ""},
		{"no yield to another policy", prio, queue(ours(1, "a", 1, "", pr), ours(2, "b", 9, "", PolicyNewestVersion)), 1, actLead, ""},
		{"no yield to foreign", prio, queue(ours(1, "a", 1, "", pr), foreign(2)), 1, actLead, ""},
		{"no yield to a no-preempt candidate", prio, func() view {
			v := queue(ours(1, "a", 1, "", pr), ours(2, "b", 9, "", pr))
			v.Queue[1].NoPreempt = true
			return v
		}(), 1, actLead, ""},
		{"no yield past a foreign", prio, queue(ours(1, "a", 1, "", pr), foreign(2), ours(3, "c", 9, "", pr)), 1, actLead, ""},
		{"waiting", prio, base, 2, actWait, ""},
		{"gone", prio, base, 7, actGone, ""},
		{"between requeues", prio, ho(base, 1, 4), 2, actRequeue, ""},
		{"between requeues too", prio, ho(base, 1, 4), 3, actRequeue, ""},
		{"target waits", prio, ho(base, 1, 4), 4, actWait, ""},
		{"behind target waits", prio, ho(base, 1, 3), 4, actWait, ""},
		{"stale handover ignored", prio, ho(queue(ours(2, "b", 1, "", pr), ours(3, "c", 1, "", pr), ours(4, "d", 1, "", pr)), 1, 4), 3, actWait, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.pref.next(tc.v, tc.me)
			if d.action != tc.want {
				t.Fatalf("action %s, want %s", d.action, tc.want)
			}
			if tc.target != "" && d.Target.ID() != tc.target {
				t.Fatalf("target %q, want %q", d.Target.ID(), tc.target)
			}
		})
	}
}

func TestTargetAndBlockers(t *testing.T) {
	pr := PolicyPriority
	v := queue(ours(1, "a", 1, "", pr), foreign(2), ours(3, "c", 1, "", pr), ours(4, "d", 9, "", pr), ours(5, "c", 1, "", pr))
	p := Preference{Policy: pr}
	if c, err := p.target(v, 1, "c"); err != nil || c.Token != 3 {
		t.Fatalf("target c = %v, %v; want token 3 (the earliest with that id)", c, err)
	}
	if c, err := p.target(v, 1, Best); err != nil || c.ID() != "d" {
		t.Fatalf("target best = %v, %v", c, err)
	}
	if _, err := p.target(v, 1, "a"); err == nil {
		t.Fatal("the leader itself is a target")
	}
	if _, err := p.target(v, 1, "etcdctl"); err == nil {
		t.Fatal("a foreign candidate is a target")
	}
	between, f := v.blockers(1, 4)
	if len(between) != 2 || f == nil || f.Token != 2 {
		t.Fatalf("blockers %v, foreign %v", between, f)
	}
	between, f = v.blockers(3, 5)
	if len(between) != 1 || between[0].Token != 4 || f != nil {
		t.Fatalf("blockers %v, foreign %v", between, f)
	}
}

func TestBuildView(t *testing.T) {
	kv := func(k string, rev, lease int64, v string) *mvccpb.KeyValue {
		return &mvccpb.KeyValue{Key: []byte(k), CreateRevision: rev, Lease: lease, Value: []byte(v)}
	}
	pfx := "e/"
	cands := []*mvccpb.KeyValue{kv("e/a1", 5, 0xa1, "x"), kv("e/b2", 7, 0xb2, "etcdctl"), kv("e/c3", 9, 0xc3, "z")}
	attrs := []*mvccpb.KeyValue{
		kv(attrKey(pfx, "e/a1"), 5, 0xa1, encodeAttrs(Attributes{ID: "x", Priority: 3, Version: "1.0.0"}, Preference{Policy: PolicyPriority})),
		kv(attrKey(pfx, "e/c3"), 9, 0xff, encodeAttrs(Attributes{ID: "z"}, Preference{})), // another lease: not c3's
	}
	h := kv(sidePrefix(pfx)+handoverKey, 10, 0xa1, `{"from":"e/a1","from_token":5,"to":"e/c3","to_token":9}`)
	v := buildView(pfx, cands, attrs, h)
	if len(v.Queue) != 3 || !v.Queue[0].Leader || v.Queue[1].Leader {
		t.Fatalf("queue %+v", v.Queue)
	}
	if a := v.Queue[0].Attributes; a == nil || a.Priority != 3 || v.Queue[0].Policy != PolicyPriority {
		t.Fatalf("attributes of a1: %+v", v.Queue[0])
	}
	if !v.Queue[1].foreign() || !v.Queue[2].foreign() {
		t.Fatal("b2 and c3 (attribute on another lease) must be foreign")
	}
	if v.handover == nil || v.handover.ToToken != 9 {
		t.Fatalf("handover %+v", v.handover)
	}
	if sp := sidePrefix(pfx); sp >= pfx && sp < "e0" {
		t.Fatalf("side prefix %q falls inside the election's range", sp)
	}
}

// model is a pure simulation of one election's queue: candidates join at
// the back (a fresh revision), leave, and the leader hands over by the
// protocol of ResignTo: the ones between re-queue, then the leader goes.
type model struct {
	rev   fencing.Token
	queue []Candidate
}

func (m *model) join(c Candidate) {
	m.rev++
	c.Token = m.rev
	c.Key = fmt.Sprintf("e/%x", m.rev)
	m.queue = append(m.queue, c)
}

func (m *model) remove(tok fencing.Token) (Candidate, bool) {
	for i, c := range m.queue {
		if c.Token == tok {
			m.queue = append(m.queue[:i:i], m.queue[i+1:]...)
			return c, true
		}
	}
	return Candidate{}, false
}

func (m *model) view() view {
	v := view{Queue: append([]Candidate(nil), m.queue...)}
	for i := range v.Queue {
		v.Queue[i].Leader = i == 0
	}
	return v
}

func genCandidate(t *rapid.T, p Policy) Candidate {
	if rapid.IntRange(0, 5).Draw(t, "foreign?") == 0 {
		return Candidate{Value: "etcdctl"}
	}
	id := rapid.SampledFrom([]string{"a", "b", "c", "d", "e"}).Draw(t, "id")
	return Candidate{Value: id, Policy: p, Attributes: &Attributes{
		ID:       id,
		Priority: int64(rapid.IntRange(0, 3).Draw(t, "prio")),
		Version:  rapid.SampledFrom([]string{"1.0.0", "1.1.0", "2.0.0-rc.1", "2.0.0", "bad"}).Draw(t, "version"),
	}}
}

// The protocol, run on the model with random joins, leaves and handovers:
// one leader at a time (the lowest token), leaders' tokens strictly
// increase, re-queues never change the leader, a handover that is not
// blocked by a foreign candidate ends with its target leading, and a leader
// that yields by the policy is not asked to yield again by its successor
// (no ping-pong) while nobody joins.
func TestProtocolModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pol := rapid.SampledFrom(Policies).Draw(t, "policy")
		pref := Preference{Policy: pol, NoPreempt: rapid.Bool().Draw(t, "no-preempt")}
		m := &model{}
		var lastLeader fencing.Token
		checkLeader := func() {
			if len(m.queue) == 0 {
				return
			}
			leaders := 0
			v := m.view()
			for _, c := range v.Queue {
				if c.foreign() {
					continue
				}
				if a := pref.next(v, c.Token).action; a == actLead || a == actYield {
					leaders++
				}
			}
			if !v.Queue[0].foreign() && leaders != 1 || v.Queue[0].foreign() && leaders != 0 {
				t.Fatalf("%d of ours lead in %+v", leaders, v.Queue)
			}
			if l := v.Queue[0].Token; l != lastLeader {
				if l < lastLeader {
					t.Fatalf("leader token went down: %d after %d", l, lastLeader)
				}
				lastLeader = l
			}
		}
		for range rapid.IntRange(1, 40).Draw(t, "steps") {
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0, 1:
				m.join(genCandidate(t, pol))
			case 2:
				if len(m.queue) > 0 {
					m.remove(m.queue[rapid.IntRange(0, len(m.queue)-1).Draw(t, "leaver")].Token)
				}
			case 3:
				if len(m.queue) == 0 || m.queue[0].foreign() {
					continue
				}
				from := m.queue[0].Token
				id := rapid.SampledFrom([]string{Best, "a", "b", "c"}).Draw(t, "to")
				tgt, err := pref.target(m.view(), from, id)
				if err != nil {
					continue
				}
				v := m.view()
				v.handover = &handover{FromToken: from, ToToken: tgt.Token}
				between, f := v.blockers(from, tgt.Token)
				if f != nil {
					continue // ResignTo refuses: the leader stays
				}
				for _, c := range v.Queue {
					want := actWait
					if c.Token == from {
						want = pref.next(v, c.Token).action // lead or yield
					} else if v.handover.passesOver(c.Token) {
						want = actRequeue
					}
					if got := pref.next(v, c.Token).action; got != want {
						t.Fatalf("during handover %d→%d candidate %d: %s, want %s", from, tgt.Token, c.Token, got, want)
					}
				}
				for _, b := range between {
					c, _ := m.remove(b.Token)
					m.join(c)
					if m.queue[0].Token != from {
						t.Fatalf("a re-queue changed the leader")
					}
				}
				m.remove(from)
				if m.queue[0].Token != tgt.Token {
					t.Fatalf("handover to %d left %d leading", tgt.Token, m.queue[0].Token)
				}
				checkLeader()
				if id == Best {
					if d := pref.next(m.view(), tgt.Token); d.action == actYield {
						t.Fatalf("best %s asked to yield at once to %s", tgt.ID(), d.Target.ID())
					}
				}
			}
			checkLeader()
		}
	})
}

// A candidate's line of `coordctl elect --candidates`: attributes and
// policy when it publishes them, and without them no word that calls it
// an outsider (coordctl elect without its coordination flags is one).
func TestCandidateString(t *testing.T) {
	c := ours(7, "web-1", 5, "1.4.0", PolicyPriority)
	c.Leader = true
	c.Attributes.Labels = map[string]string{"zone": "b", "az": "1"}
	if got, want := c.String(), "leader  token=7 id=web-1 policy=priority priority=5 version=1.4.0 az=1 zone=b"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got, want := foreign(9).String(), "waiting token=9 id=etcdctl no attributes (follows no policy: etcdctl elect, concurrency.Election, or a coordkit candidate given none)"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
