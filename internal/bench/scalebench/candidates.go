package scalebench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coordkit/coordkit/cluster"
	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/session"
)

// idleTries is how many steady-state windows a candidates point measures
// at most, looking for one without churn (see candidatesCurve).
const idleTries = 3

// win is one Campaign that returned leadership.
type win struct {
	cand int
	at   time.Time
	l    *election.Leadership
}

func (r *runner) candidatesCurve(ctx context.Context, e *env, s Shape, once bool) error {
	n := s.Elections * s.Candidates
	r.progress("many candidates %s (keepalives: %s), %d members: %d candidates (each its own client, TTL %s), %d leader crashes", s, keepAliveName(once), e.members, n, r.o.TTL, r.o.Crashes)
	root := e.name("elect" + s.String())
	clients, err := e.newClients(n + 1)
	defer e.release(clients)
	if err != nil {
		return err
	}
	observer := clients[n]
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wins := make([]chan win, s.Elections)
	var kas []*session.Keepaliver // one per candidate (its client)
	var (
		wg        sync.WaitGroup
		losses    atomic.Int64 // sessions that expired while campaigning
		campaigns atomic.Int64 // Campaign calls, the first ones included
		retried   atomic.Int64 // other campaign errors, retried
		lostLead  atomic.Int64 // leaderships lost without a crash
		// crashed holds the leaderships the bench crashed, to tell them
		// from leaderships lost because their own keepalives failed.
		crashed        sync.Map
		markCrashed    = func(l *election.Leadership) { crashed.Store(l, true) }
		crashedByBench = func(l *election.Leadership) bool { _, ok := crashed.LoadAndDelete(l); return ok }
	)
	for el := range s.Elections {
		wins[el] = make(chan win, s.Candidates*(r.o.Crashes+2))
		for c := range s.Candidates {
			id := el*s.Candidates + c
			ka := keepaliver(clients[id], once)
			kas = append(kas, ka)
			ev, err := election.New(clients[id], fmt.Sprintf("%s/%d", root, el), election.WithTTL(r.o.TTL),
				election.WithSessionOptions(session.WithKeepaliver(ka)))
			if err != nil {
				return err
			}
			defer ev.Close()
			wg.Add(1)
			go func() {
				defer wg.Done()
				for cctx.Err() == nil {
					campaigns.Add(1)
					l, err := ev.Campaign(cctx, fmt.Sprint(id))
					if err != nil && cctx.Err() == nil {
						// Its keepalives missed the local deadline while it
						// waited (session.ErrGoneWhileWaiting), or a lease grant timed
						// out on the loaded server (session.ErrUnavailable):
						// campaign again after a pause, as election.Run (the
						// sidecar's loop) does with its backoff.
						if errors.Is(err, session.ErrGoneWhileWaiting) {
							losses.Add(1)
						} else {
							retried.Add(1)
						}
						cluster.Sleep(cctx, 100*time.Millisecond)
						continue
					}
					if err != nil {
						return
					}
					wins[el] <- win{cand: id, at: time.Now(), l: l}
					select {
					case <-l.Lost(): // crashed by the bench (or its keepalives failed): campaign again, at the back
						if !crashedByBench(l) {
							lostLead.Add(1)
						}
					case <-cctx.Done():
						rctx, rc := context.WithTimeout(context.WithoutCancel(cctx), 5*time.Second)
						_ = l.Resign(rctx)
						rc()
						return
					}
				}
			}()
		}
	}
	defer wg.Wait()
	defer cancel()
	stop := func(err error) error {
		cancel()
		wg.Wait()
		return err
	}
	leaders := make([]win, s.Elections)
	first := time.NewTimer(time.Minute + time.Duration(n)*10*time.Millisecond)
	defer first.Stop()
	for el := range s.Elections {
		select {
		case w := <-wins[el]:
			leaders[el] = w
		case <-first.C:
			return stop(fmt.Errorf("election %d: no leader within %s of the start (retried: %d, sessions expired: %d)", el, time.Minute, retried.Load(), losses.Load()))
		case <-cctx.Done():
			return stop(context.Cause(cctx))
		}
	}
	// steady waits until every candidate has exactly one key (crashed
	// leaders' old keys gone, their new campaigns queued), for at most a
	// minute: with sessions expiring under load it may never hold exactly.
	unsteady := 0
	steady := func() error {
		limit := time.Now().Add(time.Minute)
		for {
			got, err := countKeys(cctx, observer, root+"/")
			if err != nil {
				return err
			}
			if got == int64(n) {
				return nil
			}
			if time.Now().After(limit) {
				unsteady++
				return nil
			}
			if !cluster.Sleep(cctx, 10*time.Millisecond) {
				return context.Cause(cctx)
			}
		}
	}
	// latest takes the newest leader of election el: one may have won
	// since (a leader whose own keepalives failed).
	latest := func(el int) {
		for {
			select {
			case w := <-wins[el]:
				leaders[el] = w
			default:
				return
			}
		}
	}
	if err := steady(); err != nil {
		return stop(err)
	}
	// Steady state: every candidate queued, keepalives flowing. The
	// window's CPU per keepalive is the process's CPU (etcd, every client,
	// the elections' idle watches) over the renewals the server counted:
	// a keepalive's cost only while nothing else happens. A session that
	// expires in the window campaigns again (a lease grant, a put, reads,
	// a watch, a new stream), whose CPU would be charged to the keepalives,
	// and on a loaded machine that churn made the figure vary by 10x
	// between runs. So a window in which any candidate campaigned is
	// measured again, up to idleTries windows; churn_campaigns_in_window
	// says what the one used had.
	idle := max(3*time.Second, 2*r.o.TTL)
	var idleRes windowResult
	var churn int64
	tries := 0
	for tries < idleTries {
		tries++
		r.progress("many candidates %s: %s steady state (keepalives, watchers), window %d", s, idle, tries)
		c0 := campaigns.Load()
		w := startWindow(cctx, nil)
		cluster.Sleep(cctx, idle)
		idleRes = w.stop()
		if churn = campaigns.Load() - c0; churn == 0 || cctx.Err() != nil {
			break
		}
	}

	var failovers []time.Duration
	for round := range r.o.Crashes {
		r.progress("many candidates %s: crash %d of %d: every election's leader stops its keepalives", s, round+1, r.o.Crashes)
		crashedAt := make([]time.Time, s.Elections)
		for el := range leaders {
			latest(el)
			crashedAt[el] = time.Now()
			markCrashed(leaders[el].l)
			leaders[el].l.Session().Orphan()
		}
		for el := range s.Elections {
			limit := time.NewTimer(r.o.TTL + 30*time.Second)
			select {
			case nw := <-wins[el]:
				limit.Stop()
				failovers = append(failovers, nw.at.Sub(crashedAt[el]))
				leaders[el] = nw
			case <-limit.C:
				return stop(fmt.Errorf("election %d: no new leader within %s of the crash", el, r.o.TTL+30*time.Second))
			case <-cctx.Done():
				limit.Stop()
				return stop(context.Cause(cctx))
			}
		}
		if err := steady(); err != nil {
			return stop(err)
		}
	}
	if err := stop(nil); err != nil {
		return err
	}
	keepalives := idleRes.delta[metricRenewed]
	add := func(metric, unit string, v float64) {
		r.add(Row{Curve: CurveCandidates, Members: e.members, Point: s.String(), X: float64(s.Candidates),
			Metric: metric, Coordkit: Value(v), EtcdConcurrency: nan, Unit: unit})
	}
	add("failover_p50_ms", "ms", bench.Ms(bench.Percentile(failovers, 0.5)))
	add("failover_max_ms", "ms", bench.Ms(bench.Percentile(failovers, 1)))
	add("keepalives_per_s", "per_s", keepalives/idleRes.wall.Seconds())
	// The model with the TTL the server granted (at least etcd's minimum).
	add("keepalives_model_per_s", "per_s", 3*float64(n)/leaders[0].l.Session().TTL().Seconds())
	add("watchers_max", "count", idleRes.maxWatchers)
	add("cpu_percent_idle", "%", idleRes.cpuPercent())
	if keepalives > 0 {
		add("cpu_us_per_keepalive", "us", float64(idleRes.cpu.Microseconds())/keepalives)
	}
	add("churn_campaigns_in_window", "count", float64(churn))
	add("idle_windows_measured", "count", float64(tries))
	add("keepalive_streams_opened_per_s_idle", "per_s", idleRes.delta[metricKeepAliveStreams]/idleRes.wall.Seconds())
	add("rss_max_mib", "MiB", idleRes.maxRSS/(1<<20))
	add("sessions_expired_campaigning", "count", float64(losses.Load()))
	var broken, onces int64
	for _, k := range kas {
		st := k.Stats()
		broken += st.StreamsBroken
		if !once {
			onces += st.OnceCalls // KeepAliveOnce while a stream was down
		}
	}
	add("keepalive_streams_broken", "count", float64(broken))
	add("keepalives_sent_once_while_down", "count", float64(onces))
	add("campaign_errors_retried", "count", float64(retried.Load()))
	add("leaderships_lost_uncrashed", "count", float64(lostLead.Load()))
	add("rounds_not_steady", "count", float64(unsteady))
	return nil
}
