package metrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/coordkit/coordkit/session"
)

// Collector holds coordkit's metrics (see the package doc). Register it on
// a prometheus.Registerer and give Observe to the sessions whose keys it
// counts. It is safe for concurrent use.
type Collector struct {
	acquisitions   *prometheus.CounterVec
	waits          *prometheus.HistogramVec
	releases       *prometheus.CounterVec
	losses         *prometheus.CounterVec
	sessionLosses  *prometheus.CounterVec
	latency        prometheus.Histogram
	keepaliveFails prometheus.Counter
}

var _ prometheus.Collector = (*Collector)(nil)

// New returns a Collector with every count at zero.
func New() *Collector {
	return &Collector{
		acquisitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coordkit_acquisitions_total",
			Help: "Keys granted to a holder: locks, semaphore slots, leaderships.",
		}, []string{"kind"}),
		waits: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "coordkit_acquisition_wait_seconds",
			Help:    "How long each granted acquisition waited.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10), // 1ms to about 4m
		}, []string{"kind"}),
		releases: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coordkit_releases_total",
			Help: "Held keys given up before any loss.",
		}, []string{"kind"}),
		losses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coordkit_losses_total",
			Help: "Held keys lost while held, by reason.",
		}, []string{"kind", "reason"}),
		sessionLosses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coordkit_session_losses_total",
			Help: "Sessions lost, by reason.",
		}, []string{"reason"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "coordkit_keepalive_latency_seconds",
			Help:    "Round trip of each successful keepalive.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14), // 0.5ms to about 4s
		}),
		keepaliveFails: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "coordkit_keepalive_failures_total",
			Help: "Keepalives that failed without ending their session.",
		}),
	}
}

// Observe counts one session event: give it to session.WithObserver.
func (c *Collector) Observe(ev session.Event) {
	if ev.Key == "" {
		switch {
		case ev.Lost:
			c.sessionLosses.WithLabelValues(reason(ev.Err)).Inc()
		case ev.Err != nil:
			c.keepaliveFails.Inc()
		case ev.KeepAliveLatency > 0:
			c.latency.Observe(ev.KeepAliveLatency.Seconds())
		}
		return
	}
	kind := ev.Kind
	if kind == "" {
		kind = "other"
	}
	switch {
	case ev.Held:
		c.acquisitions.WithLabelValues(kind).Inc()
		c.waits.WithLabelValues(kind).Observe(ev.Waited.Seconds())
	case ev.Released:
		c.releases.WithLabelValues(kind).Inc()
	case ev.Lost:
		c.losses.WithLabelValues(kind, reason(ev.Err)).Inc()
	}
}

// reason is the loss reason's label.
func reason(err error) string {
	switch {
	case errors.Is(err, session.ErrRevoked): // before ErrKeyGone, which a revoke's loss wraps too
		return "revoked"
	case errors.Is(err, session.ErrExpired):
		return "expired"
	case errors.Is(err, session.ErrKeyGone):
		return "key_gone"
	case errors.Is(err, session.ErrClosed):
		return "closed"
	}
	return "other"
}

func (c *Collector) collectors() []prometheus.Collector {
	return []prometheus.Collector{c.acquisitions, c.waits, c.releases, c.losses, c.sessionLosses, c.latency, c.keepaliveFails}
}

// Describe sends the descriptors of every metric (prometheus.Collector).
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.collectors() {
		m.Describe(ch)
	}
}

// Collect sends the current value of every metric (prometheus.Collector).
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c.collectors() {
		m.Collect(ch)
	}
}
