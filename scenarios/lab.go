package scenarios

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/coordkit/coordkit/cluster"
	"github.com/coordkit/coordkit/scenarios/report"
)

// labConfig is the lab's default configuration for a scenario: the seed of
// the run and a short op timeout, so that an operation that cannot succeed
// says so quickly.
func labConfig(env Env, nodes int) cluster.Config {
	cfg := cluster.DefaultConfig()
	cfg.Nodes = nodes
	cfg.Seed = env.Seed
	cfg.OpTimeout = time.Second
	if env.Logger != nil && env.Logger.Enabled(context.Background(), slog.LevelDebug) {
		cfg.LogOutput = slogWriter{env.Logger}
	}
	return cfg
}

// slogWriter turns the lines of Raft's log into debug records.
type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.l.Debug(strings.TrimRight(string(p), "\n"), "component", "raft")
	return len(p), nil
}

// startLab starts a cluster and waits for its first leader.
func startLab(ctx context.Context, env Env, cfg cluster.Config) (*cluster.Cluster, error) {
	env.Progressf("starting a %d-node lab cluster", cfg.Nodes)
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	c, err := cluster.New(sctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("start lab cluster: %w", err)
	}
	return c, nil
}

// waitLeader waits up to d for a leader with a quorum.
func waitLeader(ctx context.Context, c *cluster.Cluster, d time.Duration) (cluster.NodeID, error) {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return c.WaitLeader(wctx)
}

func nodeName(id cluster.NodeID) string { return fmt.Sprintf("n%d", int(id)) }

// labTimeline turns the cluster's timeline and history into the report's
// picture: each node's Raft state (down while crashed, paused while
// paused), fault windows, elections, and the client operations recs. names
// maps client IDs to names ("alice"); others are "client N".
func labTimeline(c *cluster.Cluster, recs []cluster.Record, names map[int]string) *report.Timeline {
	return buildLabTimeline(c.Timeline(), time.Duration(c.Now()), c.Size(), recs, names)
}

// buildLabTimeline is labTimeline on the cluster's events ev, for a cluster
// of n nodes observed until end.
func buildLabTimeline(ev []cluster.Event, end time.Duration, n int, recs []cluster.Record, names map[int]string) *report.Timeline {
	tl := &report.Timeline{End: report.Millis(end)}
	type laneState struct {
		raft    string // leader, follower, candidate
		down    bool
		paused  bool
		spans   []report.Span
		current string
		since   time.Duration
	}
	lanes := make([]*laneState, n+1)
	for i := 1; i <= n; i++ {
		lanes[i] = &laneState{raft: report.StateFollower, current: report.StateFollower}
	}
	set := func(id cluster.NodeID, at time.Duration) {
		if id < 1 || int(id) > n {
			return
		}
		l := lanes[id]
		st := l.raft
		switch {
		case l.down:
			st = report.StateDown
		case l.paused:
			st = report.StatePaused
		}
		if st == l.current {
			return
		}
		if at > l.since {
			l.spans = append(l.spans, report.Span{From: report.Millis(l.since), To: report.Millis(at), State: l.current})
		}
		l.current, l.since = st, at
	}
	type open struct {
		label string
		from  time.Duration
	}
	opened := map[string]open{}
	closeFault := func(key string, at time.Duration) {
		if o, ok := opened[key]; ok {
			tl.Faults = append(tl.Faults, report.Window{From: report.Millis(o.from), To: report.Millis(at), Label: o.label})
			delete(opened, key)
		}
	}
	cuts := 0
	for _, e := range ev {
		at := time.Duration(e.AtNs)
		switch e.Kind {
		case cluster.EventState:
			st := strings.ToLower(e.State)
			switch st {
			case "leader":
				lanes[e.Node].raft = report.StateLeader
				tl.Marks = append(tl.Marks, report.Mark{At: report.Millis(at), Lane: nodeName(e.Node), Label: fmt.Sprintf("leader, term %d", e.Term)})
			case "follower":
				lanes[e.Node].raft = report.StateFollower
			case "candidate":
				lanes[e.Node].raft = report.StateCandidate
			case "shutdown":
				lanes[e.Node].down = true
			}
			set(e.Node, at)
		case cluster.EventFault:
			var id int
			switch {
			case sscan(e.Detail, "crash %d", &id):
				if id >= 1 && id <= n {
					lanes[id].down = true
					set(cluster.NodeID(id), at)
				}
				opened[fmt.Sprintf("crash %d", id)] = open{e.Detail, at}
			case sscan(e.Detail, "pause %d", &id):
				if id >= 1 && id <= n {
					lanes[id].paused = true
					set(cluster.NodeID(id), at)
				}
				opened[fmt.Sprintf("pause %d", id)] = open{e.Detail, at}
			case strings.HasPrefix(e.Detail, "partition") || strings.HasPrefix(e.Detail, "cut") || strings.Contains(e.Detail, "cut true"):
				cuts++
				opened[fmt.Sprintf("cut#%d", cuts)] = open{e.Detail, at}
			default:
				tl.Marks = append(tl.Marks, report.Mark{At: report.Millis(at), Label: e.Detail})
			}
		case cluster.EventHeal:
			var id int
			switch {
			case sscan(e.Detail, "restart %d", &id):
				if id >= 1 && id <= n {
					lanes[id].down = false
					lanes[id].raft = report.StateFollower
					set(cluster.NodeID(id), at)
				}
				closeFault(fmt.Sprintf("crash %d", id), at)
			case sscan(e.Detail, "resume %d", &id):
				if id >= 1 && id <= n {
					lanes[id].paused = false
					set(cluster.NodeID(id), at)
				}
				closeFault(fmt.Sprintf("pause %d", id), at)
			default:
				for k := range opened {
					if strings.HasPrefix(k, "cut#") {
						closeFault(k, at)
					}
				}
			}
		}
	}
	keys := make([]string, 0, len(opened))
	for k := range opened {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		closeFault(k, end)
	}
	sort.SliceStable(tl.Faults, func(i, j int) bool { return tl.Faults[i].From < tl.Faults[j].From })
	for i := 1; i <= n; i++ {
		l := lanes[i]
		if end > l.since {
			l.spans = append(l.spans, report.Span{From: report.Millis(l.since), To: report.Millis(end), State: l.current})
		}
		tl.Lanes = append(tl.Lanes, report.Lane{Name: nodeName(cluster.NodeID(i)), Spans: l.spans})
	}
	for _, r := range recs {
		name := names[r.Client]
		if name == "" {
			name = fmt.Sprintf("client %d", r.Client)
		}
		ret := r.ReturnNs
		if ret < r.CallNs {
			ret = r.CallNs
		}
		tl.Ops = append(tl.Ops, report.Op{Client: name, Desc: describeRecord(r), Call: report.Millis(r.CallNs), Return: report.Millis(ret), Outcome: string(r.Outcome)})
	}
	return tl
}

func sscan(s, format string, id *int) bool {
	_, err := fmt.Sscanf(s, format, id)
	return err == nil
}

// describeRecord is a one-line account of an operation.
func describeRecord(r cluster.Record) string {
	var s string
	switch r.Op {
	case cluster.OpPut:
		s = fmt.Sprintf("put %s=%s", r.Key, r.Value)
	case cluster.OpGet:
		v := r.Value
		if !r.Found {
			v = "(none)"
		}
		if r.Outcome != cluster.OutcomeOK {
			v = "?"
		}
		s = fmt.Sprintf("get %s → %s (%s)", r.Key, v, r.Mode)
	case cluster.OpCAS:
		s = fmt.Sprintf("cas %s %s→%s swapped=%v", r.Key, r.Old, r.New, r.Swapped)
	case cluster.OpDelete:
		s = fmt.Sprintf("delete %s", r.Key)
	}
	if r.Node != 0 {
		s += " at " + nodeName(r.Node)
	}
	if r.Error != "" {
		s += ": " + r.Error
	}
	return s
}

// ackedWritesPresent reads every key that had an acknowledged put, through
// the log, and counts how many hold the last acknowledged value or a value
// written later (an unknown write may have landed after it).
func ackedWritesPresent(ctx context.Context, c *cluster.Cluster, recs []cluster.Record) (present, total int, missing []string, err error) {
	type kv struct {
		last   string
		lastAt int64
		later  map[string]bool // values of writes that may have landed after
	}
	keys := map[string]*kv{}
	for _, r := range recs {
		if r.Op != cluster.OpPut || r.Outcome != cluster.OutcomeOK {
			continue
		}
		k := keys[r.Key]
		if k == nil {
			k = &kv{later: map[string]bool{}}
			keys[r.Key] = k
		}
		if r.ReturnNs >= k.lastAt {
			k.last, k.lastAt = r.Value, r.ReturnNs
		}
	}
	for _, r := range recs {
		if r.Op != cluster.OpPut || r.Outcome == cluster.OutcomeFail {
			continue
		}
		if k := keys[r.Key]; k != nil && r.ReturnNs >= k.lastAt || k != nil && r.Outcome == cluster.OutcomeUnknown {
			k.later[r.Value] = true
		}
	}
	names := make([]string, 0, len(keys))
	for name := range keys {
		names = append(names, name)
	}
	sort.Strings(names)
	cl := c.NewClient(0)
	for _, name := range names {
		k := keys[name]
		total++
		res, gerr := cl.Get(ctx, name, cluster.ReadLog)
		if gerr != nil {
			return present, total, missing, fmt.Errorf("read back %s: %w", name, gerr)
		}
		if res.Found && (res.Value == k.last || k.later[res.Value]) {
			present++
		} else {
			missing = append(missing, fmt.Sprintf("%s: want %s, read %q", name, k.last, res.Value))
		}
	}
	return present, total, missing, nil
}

// bgWriter writes key prefix+i = i in a loop, one write at a time, until
// stopped; the cluster's history records every write.
type bgWriter struct {
	stop chan struct{}
	done chan struct{}
}

func startWriter(ctx context.Context, cl *cluster.Client, prefix string, pause time.Duration) *bgWriter {
	w := &bgWriter{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for i := 0; ; i++ {
			select {
			case <-w.stop:
				return
			case <-ctx.Done():
				return
			default:
			}
			_, _ = cl.Put(ctx, fmt.Sprintf("%s%d", prefix, i), fmt.Sprint(i))
			select {
			case <-w.stop:
				return
			case <-ctx.Done():
				return
			case <-time.After(pause):
			}
		}
	}()
	return w
}

// Stop stops the writer and waits for its last write to return.
func (w *bgWriter) Stop() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// outcomes counts the puts of client id (all clients if id < 0) by outcome.
func outcomes(recs []cluster.Record, id int) (ok, fail, unknown int) {
	for _, r := range recs {
		if r.Op != cluster.OpPut || id >= 0 && r.Client != id {
			continue
		}
		switch r.Outcome {
		case cluster.OutcomeOK:
			ok++
		case cluster.OutcomeFail:
			fail++
		default:
			unknown++
		}
	}
	return ok, fail, unknown
}
