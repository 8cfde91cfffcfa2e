package metrics_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/lock"
	"github.com/coordkit/coordkit/metrics"
	"github.com/coordkit/coordkit/session"
)

// Register the Collector on the program's registry and give its Observe
// to the primitives' sessions; here one lock is taken and released.
func Example() {
	client, err := clientv3.New(clientv3.Config{Endpoints: etcd.Endpoints()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	m := metrics.New()
	reg := prometheus.NewRegistry() // or the program's own Registerer
	reg.MustRegister(m)

	mu, err := lock.New(client, "example-metrics", lock.WithSessionOptions(session.WithObserver(m.Observe)))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mu.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := mu.Lock(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := h.Unlock(ctx); err != nil {
		fmt.Println(err)
		return
	}

	families, err := reg.Gather()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range families {
		if !strings.HasSuffix(f.GetName(), "_total") || f.GetName() == "coordkit_keepalive_failures_total" {
			continue // the histograms, and a count that depends on the network
		}
		for _, mt := range f.GetMetric() {
			var labels []string
			for _, lp := range mt.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
			}
			fmt.Printf("%s{%s} %v\n", f.GetName(), strings.Join(labels, ","), mt.GetCounter().GetValue())
		}
	}
	// Output:
	// coordkit_acquisitions_total{kind="lock"} 1
	// coordkit_releases_total{kind="lock"} 1
}
