package experiments

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/coordkit/coordkit/internal/sweep"
	"github.com/coordkit/coordkit/scenarios"
)

// electionExperiment is the Raft paper's Figure 16 trial: one cluster per
// point, its leader crashed once per seed (scenarios.ElectionLab).
func electionExperiment() Experiment {
	return Experiment{
		Name:   "election",
		Params: []string{"nodes", "timeout", "delay", "prevote", "lagging", "settle"},
		Metric: "downtime_ms", Unit: "ms",
		check: func(p sweep.Point) error { _, err := ElectionConfig(p); return err },
		open: func() (sweep.Experiment, error) {
			return sweep.OpenFunc(func(ctx context.Context, p sweep.Point) (sweep.Fixture, error) {
				cfg, err := ElectionConfig(p)
				if err != nil {
					return nil, err
				}
				lab, err := scenarios.NewElectionLab(ctx, cfg)
				if err != nil {
					return nil, err
				}
				return electionFixture{lab}, nil
			}), nil
		},
	}
}

type electionFixture struct{ lab *scenarios.ElectionLab }

func (e electionFixture) Trial(ctx context.Context, seed int64) (map[string]float64, error) {
	return e.lab.TrialMetrics(ctx, seed)
}
func (e electionFixture) Close() error { return e.lab.Close() }

// ElectionConfig reads an election point: nodes, timeout, delay (one way),
// lagging, settle, prevote (on/off); the others keep
// scenarios.DefaultElectionConfig's values. A value that does not parse is
// an error wrapping sweep.ErrSpec; the values are checked by
// ElectionConfig.Validate.
func ElectionConfig(p sweep.Point) (scenarios.ElectionConfig, error) {
	cfg := scenarios.DefaultElectionConfig()
	for k, v := range p {
		var err error
		switch k {
		case "nodes":
			cfg.Nodes, err = strconv.Atoi(v)
		case "timeout":
			cfg.Timeout, err = time.ParseDuration(v)
		case "delay":
			cfg.OneWay, err = time.ParseDuration(v)
		case "lagging":
			cfg.Lagging, err = strconv.Atoi(v)
		case "settle":
			cfg.Settle, err = time.ParseDuration(v)
		case "prevote":
			cfg.PreVote, err = onOff(v)
		}
		if err != nil {
			return cfg, fmt.Errorf("%w: %s=%q: %v", sweep.ErrSpec, k, v, err)
		}
	}
	return cfg, cfg.Validate()
}
