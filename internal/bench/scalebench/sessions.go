package scalebench

import (
	"context"
	"errors"
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

// eachKeepAlive runs a curve once per keepalive path of Options.KeepAlive.
// With both, the rows of the KeepAliveOnce run become the keepalive_once
// column of the stream run's rows (matched by curve, members, point and
// metric); with once alone they fill that column and coordkit is null.
func (r *runner) eachKeepAlive(curve func(once bool) error) error {
	var paths []bool
	switch r.o.KeepAlive {
	case KeepAliveOnce:
		paths = []bool{true}
	case KeepAliveBoth:
		paths = []bool{false, true}
	default:
		paths = []bool{false}
	}
	for _, once := range paths {
		if !once {
			if err := curve(false); err != nil {
				return err
			}
			continue
		}
		start := len(r.res.Rows)
		err := curve(true)
		onceRows := r.res.Rows[start:]
		r.res.Rows = r.res.Rows[:start:start]
		for _, o := range onceRows {
			v := o.Coordkit
			i := -1
			for j, row := range r.res.Rows {
				if row.Curve == o.Curve && row.Members == o.Members && row.Point == o.Point && row.Metric == o.Metric {
					i = j
				}
			}
			if i < 0 {
				o.Coordkit, o.KeepAliveOnce = nan, &v
				r.res.Rows = append(r.res.Rows, o)
				continue
			}
			r.res.Rows[i].KeepAliveOnce = &v
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// keepaliver returns a Keepaliver for cli on the chosen path: one per
// client, shared by the client's sessions.
func keepaliver(cli *clientv3.Client, once bool) *session.Keepaliver {
	if once {
		return session.NewKeepaliver(cli, session.KeepaliverConfig{WithoutStream: true})
	}
	return session.NewKeepaliver(cli, session.KeepaliverConfig{})
}

func keepAliveName(once bool) string {
	if once {
		return "KeepAliveOnce"
	}
	return "shared streams"
}

// sessionsCurve holds n idle sessions on one client for Options.IdleDuration
// and measures what their keepalives cost: keepalives/s on the server
// against the model 3n/TTL, CPU per keepalive, keepalive streams the
// server saw opened, and sessions lost to their local deadline.
func (r *runner) sessionsCurve(ctx context.Context, e *env, n int, once bool) error {
	ttl := r.o.IdleTTL
	r.progress("idle sessions %s (%s), %d members: %d sessions on one client at TTL %s, measured for %s", pointN(n), keepAliveName(once), e.members, n, ttl, r.o.IdleDuration)
	clients, err := e.newClients(1)
	defer e.release(clients)
	if err != nil {
		return err
	}
	cli := clients[0]
	k := keepaliver(cli, once)
	var (
		expired, revoked atomic.Int64
		measuring        atomic.Bool
		mu               sync.Mutex
		lat              []time.Duration
	)
	observe := func(ev session.Event) {
		switch {
		case ev.Key != "": // a held key's event: these sessions hold none
		case ev.Lost && errors.Is(ev.Err, session.ErrExpired):
			expired.Add(1)
		case ev.Lost && errors.Is(ev.Err, session.ErrRevoked):
			revoked.Add(1)
		case ev.KeepAliveLatency > 0 && measuring.Load():
			mu.Lock()
			lat = append(lat, ev.KeepAliveLatency)
			mu.Unlock()
		}
	}
	ss := make([]*session.Session, n)
	closeAll := func() {
		r.progress("idle sessions %s (%s): closing %d sessions", pointN(n), keepAliveName(once), n)
		parallel(n, 16, func(i int) {
			if ss[i] != nil {
				_ = ss[i].Close()
			}
		})
	}
	defer closeAll()
	errs := make([]error, n)
	t0 := time.Now()
	parallel(n, 16, func(i int) {
		if ctx.Err() != nil {
			errs[i] = ctx.Err()
			return
		}
		ss[i], errs[i] = session.New(ctx, cli, session.WithTTL(ttl), session.WithKeepaliver(k), session.WithObserver(observe))
	})
	if failed := slices.IndexFunc(errs, func(err error) bool { return err != nil }); failed >= 0 {
		n := len(slices.DeleteFunc(slices.Clone(errs), func(err error) bool { return err == nil }))
		return fmt.Errorf("%d of %d sessions not started, the first: %w", n, len(errs), errs[failed])
	}
	granted := ss[0].TTL()
	// Start-up: every session sends its first keepalive one interval
	// (TTL/3) after its grant; measure from then on.
	r.progress("idle sessions %s (%s): %d sessions started in %s; waiting one keepalive interval", pointN(n), keepAliveName(once), n, time.Since(t0).Round(time.Millisecond))
	if !cluster.Sleep(ctx, granted/3+time.Second) {
		return context.Cause(ctx)
	}
	measuring.Store(true)
	w := startWindow(ctx, nil)
	cluster.Sleep(ctx, r.o.IdleDuration)
	res := w.stop()
	measuring.Store(false)
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	add := func(metric, unit string, v float64) {
		r.add(Row{Curve: CurveSessions, Members: e.members, Point: pointN(n), X: float64(n),
			Metric: metric, Coordkit: Value(v), EtcdConcurrency: nan, Unit: unit})
	}
	keepalives := res.delta[metricRenewed]
	streams := res.delta[metricKeepAliveStreams]
	add("keepalives_per_s", "per_s", keepalives/res.wall.Seconds())
	add("keepalives_model_per_s", "per_s", 3*float64(n)/granted.Seconds())
	if keepalives > 0 {
		add("cpu_us_per_keepalive", "us", float64(res.cpu.Microseconds())/keepalives)
	}
	add("cpu_percent", "%", res.cpuPercent())
	add("keepalive_streams_opened", "count", streams)
	add("keepalive_streams_opened_per_s", "per_s", streams/res.wall.Seconds())
	mu.Lock()
	add("keepalive_p50_ms", "ms", bench.Ms(bench.Percentile(lat, 0.5)))
	add("keepalive_p99_ms", "ms", bench.Ms(bench.Percentile(lat, 0.99)))
	mu.Unlock()
	add("local_deadline_expirations", "count", float64(expired.Load()))
	add("sessions_revoked", "count", float64(revoked.Load()))
	add("goroutines_max", "count", float64(res.maxGor))
	add("rss_max_mib", "MiB", res.maxRSS/(1<<20))
	if expired.Load() > 0 {
		r.res.Notes = append(r.res.Notes, fmt.Sprintf("idle sessions %s (%s): %d sessions missed their local deadline", pointN(n), keepAliveName(once), expired.Load()))
	}
	return nil
}

// parallel runs fn(0..n-1) on at most width goroutines.
func parallel(n, width int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(width, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}
