package experiments

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/coordkit/coordkit/internal/safety"
	"github.com/coordkit/coordkit/internal/sweep"
)

// checkExperiment is a safety check per seed, each on a fresh three-member
// etcd: params fencing [on|off, on], fence-first [on|off, on], duration
// [20s], clients [5], ttl [2s], kind [mutex|rwmutex|semaphore]; in-process
// clients only (no sigstop-child).
func checkExperiment(name string, target safety.Target) Experiment {
	return Experiment{
		Name:   name,
		Params: []string{"fencing", "fence-first", "duration", "clients", "ttl", "kind"},
		Metric: "lost_updates",
		check:  func(p sweep.Point) error { _, err := CheckConfig(target, p); return err },
		open: func() (sweep.Experiment, error) {
			return sweep.OpenFunc(func(ctx context.Context, p sweep.Point) (sweep.Fixture, error) {
				cfg, err := CheckConfig(target, p)
				if err != nil {
					return nil, err
				}
				return sweep.TrialFunc(func(ctx context.Context, seed int64) (map[string]float64, error) {
					dir, err := os.MkdirTemp("", "coordctl-sweep-check-")
					if err != nil {
						return nil, err
					}
					defer os.RemoveAll(dir)
					c := cfg
					c.Seed, c.DataDir = seed, dir
					rep, _, err := safety.Run(ctx, c)
					if err != nil {
						return nil, err
					}
					return safety.Metrics(rep), nil
				}), nil
			}), nil
		},
	}
}

// CheckConfig reads a check point into target's safety.Config (20s, five
// clients, TTL 2s, fenced, fence first); safety.Config.Validate checks the
// values. A value that does not parse is an error wrapping sweep.ErrSpec.
func CheckConfig(target safety.Target, p sweep.Point) (safety.Config, error) {
	cfg := safety.Config{Target: target, Duration: 20 * time.Second, Clients: 5, TTL: 2 * time.Second, Fencing: true, DataDir: "-"}
	for k, v := range p {
		var err error
		switch k {
		case "fencing":
			cfg.Fencing, err = onOff(v)
		case "fence-first":
			var on bool
			on, err = onOff(v)
			cfg.NoFenceFirst = !on
		case "duration":
			cfg.Duration, err = time.ParseDuration(v)
		case "ttl":
			cfg.TTL, err = time.ParseDuration(v)
		case "clients":
			cfg.Clients, err = strconv.Atoi(v)
		case "kind":
			cfg.Kind = safety.Kind(v)
		}
		if err != nil {
			return cfg, fmt.Errorf("%w: %s=%q: %v", sweep.ErrSpec, k, v, err)
		}
	}
	return cfg, cfg.Validate()
}
