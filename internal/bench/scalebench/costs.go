package scalebench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/cluster"
	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/session"
)

// reads measures, on this cluster, the reads a waiter could make to find
// out what is ahead of it, over 1 and 1000 keys under one prefix (p50 of
// 100 each): the look it makes (the newest key created before its own:
// sorted by create revision, max create revision, limit 1 — etcd's
// concurrency.Mutex makes the same one, WithLastCreate and
// WithMaxCreateRev), the same with keys only, a get of one known key, and a
// count of the prefix.
func (r *runner) reads(ctx context.Context, e *env) error {
	add := func(metric, unit string, v float64) {
		r.add(Row{Curve: CurveCosts, Members: e.members, Metric: metric, Coordkit: Value(v), EtcdConcurrency: nan, Unit: unit})
	}
	clients, err := e.newClients(4)
	defer e.release(clients)
	if err != nil {
		return err
	}
	for _, keys := range []int{1, 1000} {
		r.progress("costs: a waiter's reads over %d keys, %d members", keys, e.members)
		pfx := e.name(fmt.Sprintf("costs-look%d", keys)) + "/"
		for i := range keys {
			if _, err := clients[i%len(clients)].Put(ctx, fmt.Sprintf("%s%06d", pfx, i), "x"); err != nil {
				return err
			}
		}
		last := fmt.Sprintf("%s%06d", pfx, keys-1)
		look := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend),
			clientv3.WithMaxCreateRev(1 << 62), clientv3.WithLimit(1)}
		for _, v := range []struct {
			metric string
			key    string
			opts   []clientv3.OpOption
		}{
			{"waiter_read_%dkeys_p50_ms", pfx, look},
			{"read_sorted_keysonly_%dkeys_p50_ms", pfx, append(slices.Clone(look), clientv3.WithKeysOnly())},
			{"read_one_key_%dkeys_p50_ms", last, nil},
			{"read_count_%dkeys_p50_ms", pfx, []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithCountOnly()}},
		} {
			var lat []time.Duration
			for range 100 {
				t0 := time.Now()
				if _, err := clients[0].Get(ctx, v.key, v.opts...); err != nil {
					return err
				}
				lat = append(lat, time.Since(t0))
			}
			add(fmt.Sprintf(v.metric, keys), "ms", bench.Ms(bench.Percentile(lat, 0.5)))
		}
		if _, err := clients[0].Delete(ctx, pfx, clientv3.WithPrefix()); err != nil {
			return err
		}
	}
	return nil
}

// costs measures the per-operation costs docs/scale.md's model is built
// from: a commit (one client's sequential puts), a watch event (many
// watchers on one key), a keepalive (idle sessions).
func (r *runner) costs(ctx context.Context, e *env) error {
	add := func(metric, unit string, v float64) {
		r.add(Row{Curve: CurveCosts, Members: e.members, Metric: metric, Coordkit: Value(v), EtcdConcurrency: nan, Unit: unit})
	}
	const puts = 200
	r.progress("costs: %d sequential puts (a commit each)", puts)
	clients, err := e.newClients(10)
	defer e.release(clients)
	if err != nil {
		return err
	}
	key := e.name("costs")
	var lat []time.Duration
	w := startWindow(ctx, nil)
	for i := range puts {
		t0 := time.Now()
		if _, err := clients[0].Put(ctx, key, fmt.Sprint(i)); err != nil {
			return err
		}
		lat = append(lat, time.Since(t0))
	}
	res := w.stop()
	add("commit_p50_ms", "ms", bench.Ms(bench.Percentile(lat, 0.5)))
	add("commit_p99_ms", "ms", bench.Ms(bench.Percentile(lat, 0.99)))
	add("commits_per_s_one_client", "per_s", puts/res.wall.Seconds())
	if c := res.delta[metricWALFsync+"_count"]; c > 0 {
		add("wal_fsync_mean_ms", "ms", 1000*res.delta[metricWALFsync+"_sum"]/c)
	}
	if c := res.delta[metricBackendCo+"_count"]; c > 0 {
		add("backend_commit_mean_ms", "ms", 1000*res.delta[metricBackendCo+"_sum"]/c)
	}
	add("cpu_us_per_commit", "us", float64(res.cpu.Microseconds())/puts)

	// Watch events: 1000 watchers over 10 clients on one key, 20 puts.
	const watchers, wputs = 1000, 20
	r.progress("costs: %d watchers on one key, %d puts", watchers, wputs)
	wkey := e.name("costs-watch")
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var got atomic.Int64
	var wg sync.WaitGroup
	ready := make(chan struct{}, watchers)
	for i := range watchers {
		ch := clients[i%len(clients)].Watch(wctx, wkey, clientv3.WithCreatedNotify())
		wg.Add(1)
		go func() {
			defer wg.Done()
			for wr := range ch {
				if wr.Created {
					ready <- struct{}{}
				}
				got.Add(int64(len(wr.Events)))
			}
		}()
	}
	for range watchers {
		select {
		case <-ready:
		case <-ctx.Done():
			cancel()
			wg.Wait()
			return ctx.Err()
		}
	}
	w = startWindow(ctx, nil)
	for i := range wputs {
		if _, err := clients[0].Put(ctx, wkey, fmt.Sprint(i)); err != nil {
			cancel()
			wg.Wait()
			return err
		}
	}
	for got.Load() < watchers*wputs && ctx.Err() == nil {
		cluster.Sleep(ctx, time.Millisecond)
	}
	res = w.stop()
	cancel()
	wg.Wait()
	events := float64(watchers * wputs)
	add("watch_events_per_s", "per_s", events/res.wall.Seconds())
	add("cpu_us_per_watch_event", "us", float64(res.cpu.Microseconds())/events)

	// Keepalives: idle sessions at TTL 3s (one keepalive a second each),
	// on one stream per client.
	const sessions = 300
	r.progress("costs: %d idle sessions at TTL 3s for 4s", sessions)
	var ss []*session.Session
	defer func() {
		for _, s := range ss {
			_ = s.Close()
		}
	}()
	kas := make([]*session.Keepaliver, len(clients))
	for i, c := range clients {
		kas[i] = session.NewKeepaliver(c, session.KeepaliverConfig{})
	}
	for i := range sessions {
		s, err := session.New(ctx, clients[i%len(clients)], session.WithTTL(3*time.Second), session.WithKeepaliver(kas[i%len(clients)]))
		if err != nil {
			return err
		}
		ss = append(ss, s)
	}
	w = startWindow(ctx, nil)
	cluster.Sleep(ctx, 4*time.Second)
	res = w.stop()
	if k := res.delta[metricRenewed]; k > 0 {
		add("keepalives_per_s", "per_s", k/res.wall.Seconds())
		add("cpu_us_per_keepalive", "us", float64(res.cpu.Microseconds())/k)
	}
	for _, s := range ss {
		_ = s.Close()
	}
	ss = nil
	return r.loneKeepalives(ctx, e, add)
}

// loneSessions is the number of clients, one session each, of the lone
// keepalive costs.
const loneSessions = 100

// loneKeepalives measures what a keepalive costs with one session per
// client (as 1x500 candidates have: nothing for a client's sessions to
// share but the stream), on a long-lived stream and with KeepAliveOnce,
// one after the other, with nothing else running: the cost a keepalive has
// at 1x500 without the elections' churn (see candidatesCurve). The TTL is
// 10s, the interval 250ms, so that no session comes near its deadline on a
// loaded machine and nothing campaigns or re-grants in the window. The
// process's CPU in an idle window first (the clients connected, no
// session: etcd's ticks, the runtime) is its floor, taken off per second
// of each window (lone_cpu_us_per_keepalive_*); the rows *_gross keep it.
func (r *runner) loneKeepalives(ctx context.Context, e *env, add func(metric, unit string, v float64)) error {
	const interval = 250 * time.Millisecond
	r.progress("costs: %d sessions, one per client, keepalive every %s for 4s, on a stream and with KeepAliveOnce", loneSessions, interval)
	clients, err := e.newClients(loneSessions)
	defer e.release(clients)
	if err != nil {
		return err
	}
	w := startWindow(ctx, nil)
	cluster.Sleep(ctx, 2*time.Second)
	floor := w.stop()
	floorPerSec := floor.cpu.Seconds() / floor.wall.Seconds()
	add("lone_idle_cpu_percent", "%", floor.cpuPercent())
	for _, once := range []bool{false, true} {
		var ss []*session.Session
		for _, c := range clients {
			s, err := session.New(ctx, c, session.WithTTL(10*time.Second), session.WithKeepAliveInterval(interval), session.WithKeepaliver(keepaliver(c, once)))
			if err != nil {
				for _, s := range ss {
					_ = s.Close()
				}
				return err
			}
			ss = append(ss, s)
		}
		cluster.Sleep(ctx, time.Second) // every session's first keepalive out, streams open
		w := startWindow(ctx, nil)
		cluster.Sleep(ctx, 4*time.Second)
		res := w.stop()
		for _, s := range ss {
			_ = s.Close()
		}
		name := "stream"
		if once {
			name = "once"
		}
		if k := res.delta[metricRenewed]; k > 0 {
			net := res.cpu.Seconds() - floorPerSec*res.wall.Seconds()
			add("lone_keepalives_per_s_"+name, "per_s", k/res.wall.Seconds())
			add("lone_cpu_us_per_keepalive_"+name, "us", 1e6*net/k)
			add("lone_cpu_us_per_keepalive_gross_"+name, "us", float64(res.cpu.Microseconds())/k)
		}
	}
	return ctx.Err()
}
