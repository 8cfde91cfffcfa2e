package sidecar

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/coordkit/coordkit/internal/buildinfo"
)

// Metric names exported by a sidecar (all labelled election and id).
const (
	MetricIsLeader           = "coordkit_sidecar_is_leader"
	MetricLeaderTransitions  = "coordkit_sidecar_leader_transitions_total"
	MetricCampaignSeconds    = "coordkit_sidecar_campaign_duration_seconds"
	MetricKeepAliveSeconds   = "coordkit_sidecar_keepalive_latency_seconds"
	MetricLeaseRemainingSecs = "coordkit_sidecar_lease_remaining_seconds"
	// MetricBuildInfo is always 1; its labels say which build runs
	// (version, revision, modified, go_version, etcd_client, etcd_server).
	MetricBuildInfo = "coordctl_build_info"
)

// NewRegistry is a registry of its own for one sidecar process, with the
// Go and process collectors: Config's Registerer and Gatherer.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Metrics are one sidecar's Prometheus metrics. They are registered on a
// Registerer the caller owns: several sidecars can run in one process.
type Metrics struct {
	isLeader    prometheus.Gauge
	transitions prometheus.Counter
	campaign    prometheus.Histogram
	keepalive   prometheus.Histogram
}

// NewMetrics creates the metrics and registers them on reg. leaseLeft is
// called at scrape time for the seconds left before the local deadline of
// the current lease (0 without one).
func NewMetrics(reg prometheus.Registerer, name, id string, leaseLeft func() time.Duration, build buildinfo.Info) (*Metrics, error) {
	labels := prometheus.Labels{"election": name, "id": id}
	buildLabels := prometheus.Labels{"election": name, "id": id,
		"version": build.Version, "revision": build.Revision, "modified": strconv.FormatBool(build.Modified),
		"go_version": build.GoVersion, "etcd_client": build.EtcdClient, "etcd_server": build.EtcdServer}
	buildInfo := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: MetricBuildInfo, ConstLabels: buildLabels,
		Help: "Always 1; the labels name the build of coordctl serving this sidecar (as 'coordctl version' prints it).",
	}, func() float64 { return 1 })
	m := &Metrics{
		isLeader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: MetricIsLeader, ConstLabels: labels,
			Help: "1 while this instance leads the election, else 0.",
		}),
		transitions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricLeaderTransitions, ConstLabels: labels,
			Help: "Changes of leader this instance observed (a new leader or token, or no leader).",
		}),
		campaign: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: MetricCampaignSeconds, ConstLabels: labels,
			Help:    "Seconds from joining the candidates' queue to winning the election (includes waiting for the previous leader).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 3600},
		}),
		keepalive: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: MetricKeepAliveSeconds, ConstLabels: labels,
			Help:    "Round-trip seconds of successful lease keepalives.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
	}
	left := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: MetricLeaseRemainingSecs, ConstLabels: labels,
		Help: "Seconds left before the local deadline of this instance's lease (0 without a live lease).",
	}, func() float64 {
		if leaseLeft == nil {
			return 0
		}
		return max(leaseLeft().Seconds(), 0)
	})
	for _, c := range []prometheus.Collector{m.isLeader, m.transitions, m.campaign, m.keepalive, left, buildInfo} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Observe updates the gauges and counters after a state change.
func (m *Metrics) Observe(s State, c Change) {
	if m == nil {
		return
	}
	if s.IsLeader {
		m.isLeader.Set(1)
	} else {
		m.isLeader.Set(0)
	}
	if c.LeaderChanged {
		m.transitions.Inc()
	}
}

// ObserveCampaign records how long a campaign took to win.
func (m *Metrics) ObserveCampaign(d time.Duration) {
	if m != nil {
		m.campaign.Observe(d.Seconds())
	}
}

// ObserveKeepAlive records the latency of one successful keepalive.
func (m *Metrics) ObserveKeepAlive(d time.Duration) {
	if m != nil {
		m.keepalive.Observe(d.Seconds())
	}
}
