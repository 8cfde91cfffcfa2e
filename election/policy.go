package election

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/primitive"
)

// This file is the pure core of coordinated election: which candidate
// should lead given the queue and the candidates' attributes, and what each
// candidate must do next. No I/O; coordinated.go drives it.

// Policy chooses which candidate should lead. The leader is always the
// candidate with the lowest create revision (what etcd's concurrency.Election
// and `etcdctl elect` obey); a policy only decides who steps aside so that
// the preferred candidate becomes the lowest (see the package doc).
type Policy string

// Policies.
const (
	// PolicyFirstCome: candidates lead in the order they arrived, as etcd's
	// own election serves them. The default; writes nothing but etcd's
	// layout unless attributes are given.
	PolicyFirstCome Policy = "first-come"
	// PolicyPriority: the live candidate with the highest Priority leads,
	// ties by arrival.
	PolicyPriority Policy = "priority"
	// PolicyNewestVersion: the candidate with the highest Version leads
	// (ties by priority, then arrival), so that during a rolling upgrade
	// leadership moves once, to the first upgraded candidate, and stays.
	PolicyNewestVersion Policy = "newest-version"
	// PolicyOldestVersion: the candidate with the lowest Version leads
	// (ties by priority, then arrival): KEP-4355's strategy, for
	// controllers that must not run new logic while old replicas remain.
	PolicyOldestVersion Policy = "oldest-version"
)

// Policies lists the policies in the order help text shows them.
var Policies = []Policy{PolicyFirstCome, PolicyPriority, PolicyNewestVersion, PolicyOldestVersion}

// ParsePolicy returns the policy called s ("" is PolicyFirstCome).
// Errors wrap ErrBadPolicy.
func ParsePolicy(s string) (Policy, error) {
	if s == "" {
		return PolicyFirstCome, nil
	}
	for _, p := range Policies {
		if string(p) == s {
			return p, nil
		}
	}
	names := make([]string, len(Policies))
	for i, p := range Policies {
		names[i] = string(p)
	}
	return "", fmt.Errorf("%w: %q (want %s)", ErrBadPolicy, s, strings.Join(names, ", "))
}

func (p Policy) orDefault() Policy {
	if p == "" {
		return PolicyFirstCome
	}
	return p
}

// Attributes describe a candidate to the others. They are published next
// to its key (outside the election's prefix, so foreign clients never see
// them) and live on the same lease.
type Attributes struct {
	// ID names the candidate for ResignTo; the proclaimed value when empty.
	ID string `json:"id"`
	// Priority: higher leads under PolicyPriority, and breaks version ties.
	Priority int64 `json:"priority"`
	// Version is a semantic version ("1.4.0", "v2.0.0-rc.1"); one that does
	// not parse is never preferred for its version.
	Version string `json:"version,omitempty"`
	// Labels are free-form (zone, node...), shown by Candidates.
	Labels map[string]string `json:"labels,omitempty"`
}

// attrRecord is the JSON stored in a candidate's attribute key: its
// attributes and the policy it follows (a leader hands over automatically
// only to a candidate that follows the same policy: two policies could
// otherwise pass leadership back and forth).
type attrRecord struct {
	Attributes
	Policy    Policy `json:"policy"`
	NoPreempt bool   `json:"no_preempt,omitempty"`
}

func encodeAttrs(a Attributes, p Preference) string {
	b, _ := json.Marshal(attrRecord{Attributes: a, Policy: p.Policy.orDefault(), NoPreempt: p.NoPreempt})
	return string(b)
}

func decodeAttrs(b []byte) (attrRecord, bool) {
	var r attrRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return attrRecord{}, false
	}
	r.Policy = r.Policy.orDefault()
	return r, true
}

// Preference is a policy and whether it preempts.
type Preference struct {
	Policy Policy
	// NoPreempt: a preferred candidate that joins waits for the leader to
	// resign or fail instead of taking over at once. A leader with it never
	// yields, and a candidate with it is never yielded to (it takes over
	// only by ResignTo or a failure).
	NoPreempt bool
}

// preempts reports whether a leader hands over on its own when a
// candidate it prefers is in line.
func (p Preference) preempts() bool {
	return !p.NoPreempt && p.Policy.orDefault() != PolicyFirstCome
}

// Candidate is one entry of an election's queue.
type Candidate struct {
	// Key is the candidate's key, prefix/name/<lease hex>.
	Key string `json:"key"`
	// Lease is the lease its key lives on.
	Lease clientv3.LeaseID `json:"lease"`
	// Token is the key's create revision: its place in the queue, and its
	// fencing token should it lead.
	Token fencing.Token `json:"token"`
	// Value is what it proclaimed.
	Value string `json:"value"`
	// Leader: the lowest create revision, the one that leads.
	Leader bool `json:"leader"`
	// Attributes are nil for a foreign candidate (etcdctl elect, etcd's
	// concurrency.Election): one that publishes none and follows no policy.
	Attributes *Attributes `json:"attributes,omitempty"`
	// Policy is the policy the candidate follows; empty for a foreign one.
	Policy Policy `json:"policy,omitempty"`
	// NoPreempt: the candidate asked not to take over from a leader; it
	// leads when the leader resigns (to it, or to the best) or fails.
	NoPreempt bool `json:"no_preempt,omitempty"`
}

// foreign reports whether the candidate publishes no attributes.
func (c Candidate) foreign() bool { return c.Attributes == nil }

// String is the candidate as one line of `coordctl elect --candidates`:
// its role (leader or waiting), token, ID, and its policy and attributes,
// labels sorted (or that it publishes none).
func (c Candidate) String() string {
	role := "waiting"
	if c.Leader {
		role = "leader"
	}
	line := fmt.Sprintf("%-7s token=%d id=%s", role, c.Token, primitive.TextValue(c.ID()))
	if c.foreign() {
		// Not "foreign": coordctl elect without --policy, --priority,
		// --version or --label publishes none either.
		return line + " no attributes (follows no policy: etcdctl elect, concurrency.Election, or a coordkit candidate given none)"
	}
	a := c.Attributes
	line += fmt.Sprintf(" policy=%s priority=%d", c.Policy, a.Priority)
	if a.Version != "" {
		line += " version=" + primitive.TextValue(a.Version)
	}
	for _, k := range slices.Sorted(maps.Keys(a.Labels)) {
		line += fmt.Sprintf(" %s=%s", primitive.TextValue(k), primitive.TextValue(a.Labels[k]))
	}
	return line
}

// ID is the candidate's ID, its proclaimed value if it has none.
func (c Candidate) ID() string {
	if c.Attributes != nil && c.Attributes.ID != "" {
		return c.Attributes.ID
	}
	return c.Value
}

// handover is the record of a handover in progress: the leader From asks
// every candidate queued between it and To to re-queue, then resigns, so
// that To becomes the lowest key.
type handover struct {
	From      string        `json:"from"`
	FromToken fencing.Token `json:"from_token"`
	To        string        `json:"to"`
	ToToken   fencing.Token `json:"to_token"`
}

// passesOver reports whether the handover asks the candidate with token t
// to step aside.
func (h handover) passesOver(t fencing.Token) bool { return t > h.FromToken && t < h.ToToken }

// view is one consistent read of an election: the queue in create order
// (Queue[0] leads) and the handover in progress, if any.
type view struct {
	Queue    []Candidate
	handover *handover
}

// prefer compares two candidates' attributes under p: > 0 when a should
// lead rather than b, < 0 the reverse, 0 when only arrival tells them apart.
func (p Policy) prefer(a, b Attributes) int {
	switch p.orDefault() {
	case PolicyPriority:
		return cmp.Compare(a.Priority, b.Priority)
	case PolicyNewestVersion:
		if c := CompareVersions(a.Version, b.Version); c != 0 {
			return c
		}
		return cmp.Compare(a.Priority, b.Priority)
	case PolicyOldestVersion:
		va, okA := parseVersion(a.Version)
		vb, okB := parseVersion(b.Version)
		switch {
		case okA && okB:
			if c := vb.compare(va); c != 0 {
				return c
			}
		case okA != okB:
			if okA {
				return 1 // a version that does not parse is never the oldest
			}
			return -1
		}
		return cmp.Compare(a.Priority, b.Priority)
	}
	return 0
}

// Best returns the candidate p prefers among the queue's candidates that
// follow a policy (foreign ones never are), other than the one with token
// except (0: none excluded); ties go to the earliest. false when there is
// none.
func (p Preference) Best(queue []Candidate, except fencing.Token) (Candidate, bool) {
	var best Candidate
	found := false
	for _, c := range queue {
		if c.foreign() || c.Token == except {
			continue
		}
		if !found || p.Policy.prefer(*c.Attributes, *best.Attributes) > 0 {
			best, found = c, true
		}
	}
	return best, found
}

// action is what a candidate must do next.
type action int

// Actions.
const (
	// actWait: in line; wait for the candidate before us to go.
	actWait action = iota
	// actLead: ours is the lowest key: we lead.
	actLead
	// actRequeue: a handover passes over us: delete our key and create it
	// again, at the back of the line.
	actRequeue
	// actYield: we lead, but the policy prefers decision.Target and no
	// foreign candidate is queued before it: stop acting and hand over to
	// it (ResignTo Best).
	actYield
	// actGone: our key is not in the queue.
	actGone
)

func (a action) String() string {
	switch a {
	case actWait:
		return "wait"
	case actLead:
		return "lead"
	case actRequeue:
		return "requeue"
	case actYield:
		return "yield"
	case actGone:
		return "gone"
	}
	return fmt.Sprintf("action(%d)", int(a))
}

// decision is an action and, for actYield, the candidate to hand over to.
type decision struct {
	action action
	Target Candidate
}

// Next decides what the candidate with token me, following p, must do in v.
func (p Preference) next(v view, me fencing.Token) decision {
	i := v.index(me)
	if i < 0 {
		return decision{action: actGone}
	}
	if i == 0 {
		self := v.Queue[0]
		if p.preempts() && !self.foreign() {
			b, ok := p.Best(v.Queue, me)
			if ok && b.Policy == p.Policy.orDefault() && !b.NoPreempt && p.Policy.prefer(*b.Attributes, *self.Attributes) > 0 {
				// Yield only where the handover can go through: a foreign
				// candidate before the target would lead instead.
				if _, f := v.blockers(me, b.Token); f == nil {
					return decision{action: actYield, Target: b}
				}
			}
		}
		return decision{action: actLead}
	}
	if h := v.handover; h != nil && h.FromToken == v.Queue[0].Token && h.passesOver(me) {
		return decision{action: actRequeue}
	}
	return decision{action: actWait}
}

func (v view) index(t fencing.Token) int {
	for i, c := range v.Queue {
		if c.Token == t {
			return i
		}
	}
	return -1
}

// Target picks the candidate a leader with token from hands over to: the
// one with this ID (the earliest if several share it), or p's best other
// candidate when id is Best. Errors wrap ErrNoCandidate.
func (p Preference) target(v view, from fencing.Token, id string) (Candidate, error) {
	if id == Best {
		if c, ok := p.Best(v.Queue, from); ok {
			return c, nil
		}
		return Candidate{}, fmt.Errorf("%w: no other candidate follows a policy", ErrNoCandidate)
	}
	for _, c := range v.Queue {
		if !c.foreign() && c.Token != from && c.ID() == id {
			return c, nil
		}
	}
	return Candidate{}, fmt.Errorf("%w: no other candidate has id %q", ErrNoCandidate, id)
}

// blockers returns the candidates queued between from and to: the ones that
// must re-queue before the leader from may resign in favour of to. foreign
// is the first of them that follows no policy and so will not move (the
// handover cannot go on), or nil.
func (v view) blockers(from, to fencing.Token) (between []Candidate, foreign *Candidate) {
	h := handover{FromToken: from, ToToken: to}
	for i, c := range v.Queue {
		if !h.passesOver(c.Token) {
			continue
		}
		between = append(between, c)
		if c.foreign() && foreign == nil {
			foreign = &v.Queue[i]
		}
	}
	return between, foreign
}

// keys of the coordination side data. They live under name+"\x00coord/",
// a sibling of the election's prefix name+"/": outside it, so that etcd's
// own candidates (which treat every key under name+"/" as a candidate)
// never see them, and no election name without a NUL byte can alias them.
const (
	sideSep     = "\x00coord/"
	attrInfix   = "attr/"
	handoverKey = "handover"
)

// sidePrefix returns the side-data prefix for an election whose keys are
// under keyPrefix (which ends in "/").
func sidePrefix(keyPrefix string) string {
	return strings.TrimSuffix(keyPrefix, "/") + sideSep
}

// attrKey returns the attribute key of the candidate key ck.
func attrKey(keyPrefix, ck string) string {
	return sidePrefix(keyPrefix) + attrInfix + strings.TrimPrefix(ck, keyPrefix)
}

// buildView joins one read of an election — its candidate keys in create
// order, the attribute keys and the handover key (nil when absent) — into a
// view. An attribute key counts only on the same lease as its candidate
// key. Pure.
func buildView(keyPrefix string, cands, attrs []*mvccpb.KeyValue, handoverKV *mvccpb.KeyValue) view {
	byKey := make(map[string]*mvccpb.KeyValue, len(attrs))
	for _, kv := range attrs {
		byKey[string(kv.Key)] = kv
	}
	v := view{Queue: make([]Candidate, 0, len(cands))}
	for i, kv := range cands {
		c := Candidate{
			Key:    string(kv.Key),
			Lease:  clientv3.LeaseID(kv.Lease),
			Token:  fencing.Token(kv.CreateRevision),
			Value:  string(kv.Value),
			Leader: i == 0,
		}
		if a, ok := byKey[attrKey(keyPrefix, c.Key)]; ok && a.Lease == kv.Lease {
			if r, ok := decodeAttrs(a.Value); ok {
				attrs := r.Attributes
				c.Attributes, c.Policy, c.NoPreempt = &attrs, r.Policy, r.NoPreempt
			}
		}
		v.Queue = append(v.Queue, c)
	}
	if handoverKV != nil {
		var h handover
		if json.Unmarshal(handoverKV.Value, &h) == nil {
			v.handover = &h
		}
	}
	return v
}
