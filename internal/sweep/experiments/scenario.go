package experiments

import (
	"context"
	"fmt"
	"strings"

	"github.com/coordkit/coordkit/internal/etcdembed"
	"github.com/coordkit/coordkit/internal/sweep"
	"github.com/coordkit/coordkit/scenarios"
	"github.com/coordkit/coordkit/scenarios/report"
)

// scenarioExperiment runs a scenario of scenarios.Default per seed: params
// name (required) and scale [small]; the metrics are the report's, plus
// claims_failed. Scenarios that need etcd get an embedded one each.
func scenarioExperiment() Experiment {
	return Experiment{
		Name:   "scenario",
		Params: []string{"name", "scale"},
		Metric: "claims_failed",
		open: func() (sweep.Experiment, error) {
			reg, err := scenarios.Default()
			if err != nil {
				return nil, err
			}
			return sweep.OpenFunc(func(ctx context.Context, p sweep.Point) (sweep.Fixture, error) {
				return scenarioFixture(reg, p)
			}), nil
		},
	}
}

// scenarioFixture runs the named scenario once per seed.
func scenarioFixture(reg *scenarios.Registry, p sweep.Point) (sweep.Fixture, error) {
	name := p["name"]
	if _, ok := reg.Lookup(name); !ok {
		return nil, fmt.Errorf("%w: unknown scenario %q; scenarios are: %s", sweep.ErrSpec, name, strings.Join(reg.Names(), ", "))
	}
	scale := scenarios.ScaleSmall
	if v, ok := p["scale"]; ok {
		s, err := scenarios.ParseScale(v)
		if err != nil {
			return nil, err
		}
		scale = s
	}
	return sweep.TrialFunc(func(ctx context.Context, seed int64) (map[string]float64, error) {
		rep, err := reg.Run(ctx, name, scenarios.Env{Seed: seed, Scale: scale, StartEtcd: etcdembed.Scratch})
		if err != nil {
			return nil, err
		}
		return ScenarioMetrics(rep), nil
	}), nil
}

// ScenarioMetrics is a report's metrics plus claims_failed, the number of
// its claims that do not hold.
func ScenarioMetrics(rep *report.Report) map[string]float64 {
	m := map[string]float64{}
	for _, x := range rep.Metrics {
		m[x.Name] = x.Value
	}
	failed := 0
	for _, c := range rep.Claims {
		if !c.Holds {
			failed++
		}
	}
	m["claims_failed"] = float64(failed)
	return m
}
