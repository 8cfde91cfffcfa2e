// The experiments coordctl lab sweep runs: an election trial, a scenario, a safety check, each a sweep.Experiment.

package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/coordkit/coordkit/internal/safety"
	"github.com/coordkit/coordkit/internal/sweep"
	"github.com/coordkit/coordkit/scenarios"
	"github.com/coordkit/coordkit/scenarios/report"
)

// sweepExperiment is one experiment the sweep can run.
type sweepExperiment struct {
	// params are the parameters it reads (any other is a usage error).
	params []string
	metric string // default metric
	unit   string
	open   func(f *factory) (sweep.Experiment, error)
	// check, if set, reads a point as open would: a bad value is a usage
	// error before anything runs, not an error in every trial.
	check func(p sweep.Point) error
}

// sweepExperiments is the one table of experiments: lab sweep and lab
// figure16 read it.
var sweepExperiments = map[string]sweepExperiment{
	"lock-safety":     checkExperiment(safety.TargetLock),
	"election-safety": checkExperiment(safety.TargetElection),
	"election": {
		params: []string{"nodes", "timeout", "delay", "prevote", "lagging", "settle"},
		metric: "downtime_ms", unit: "ms",
		check: func(p sweep.Point) error { _, err := electionConfig(p); return err },
		open: func(f *factory) (sweep.Experiment, error) {
			return sweep.OpenFunc(func(ctx context.Context, p sweep.Point) (sweep.Fixture, error) {
				cfg, err := electionConfig(p)
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
	},
	"scenario": {
		params: []string{"name", "scale"},
		metric: "claims_failed",
		open: func(f *factory) (sweep.Experiment, error) {
			reg, err := scenarios.Default()
			if err != nil {
				return nil, err
			}
			return sweep.OpenFunc(func(ctx context.Context, p sweep.Point) (sweep.Fixture, error) {
				return scenarioFixture(f, reg, p)
			}), nil
		},
	},
}

// checkExperiment is a safety check per seed: params fencing [on|off, on],
// fence-first [on|off, on], duration [20s], clients [5], ttl [2s], kind
// [mutex|rwmutex|semaphore]; in-process clients only (no sigstop-child).
func checkExperiment(target safety.Target) sweepExperiment {
	return sweepExperiment{
		params: []string{"fencing", "fence-first", "duration", "clients", "ttl", "kind"},
		metric: "lost_updates",
		check:  func(p sweep.Point) error { _, err := checkConfig(target, p); return err },
		open: func(f *factory) (sweep.Experiment, error) {
			return sweep.OpenFunc(func(ctx context.Context, p sweep.Point) (sweep.Fixture, error) {
				cfg, err := checkConfig(target, p)
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
					return checkMetrics(rep), nil
				}), nil
			}), nil
		},
	}
}

// checkConfig reads a check point; safety.Config.Validate checks the values.
func checkConfig(target safety.Target, p sweep.Point) (safety.Config, error) {
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

// onOff reads a sweep's on/off parameter value.
func onOff(v string) (bool, error) {
	switch v {
	case "on", "true":
		return true, nil
	case "off", "false":
		return false, nil
	}
	return false, errors.New("want on or off")
}

// checkMetrics is a check's report as numbers.
func checkMetrics(rep safety.Report) map[string]float64 {
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	return map[string]float64{
		"lost_updates": float64(rep.LostUpdates), "overlapping_holders": float64(rep.OverlappingHolders),
		"violations": float64(rep.Violations), "faults": float64(rep.FaultTotal()), "effective_faults": float64(rep.EffectiveFaults),
		"acquisitions": float64(rep.Acquisitions), "writes": float64(rep.Writes), "stale_rejected": float64(rep.StaleRejected),
		"passed": b(rep.Passed), "linearizable": b(rep.Linearizable), "failed": b(checkFailed(rep)),
	}
}

type electionFixture struct{ lab *scenarios.ElectionLab }

func (e electionFixture) Trial(ctx context.Context, seed int64) (map[string]float64, error) {
	return e.lab.TrialMetrics(ctx, seed)
}
func (e electionFixture) Close() error { return e.lab.Close() }

// electionConfig reads an election point; values are checked by
// ElectionConfig.Validate.
func electionConfig(p sweep.Point) (scenarios.ElectionConfig, error) {
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

// scenarioFixture runs the named scenario once per seed.
func scenarioFixture(f *factory, reg *scenarios.Registry, p sweep.Point) (sweep.Fixture, error) {
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
		rep, err := reg.Run(ctx, name, scenarios.Env{Seed: seed, Scale: scale, StartEtcd: embeddedEtcd})
		if err != nil {
			return nil, err
		}
		return scenarioMetrics(rep), nil
	}), nil
}

// scenarioMetrics is a report's metrics plus claims_failed.
func scenarioMetrics(rep *report.Report) map[string]float64 {
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
