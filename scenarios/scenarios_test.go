package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing/sqlfence"
	"github.com/coordkit/coordkit/fencing/sqlfence/sqltest"
	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
	"github.com/coordkit/coordkit/internal/nettest"
	"github.com/coordkit/coordkit/internal/redislock/redistest"
	"github.com/coordkit/coordkit/scenarios/report"
	"github.com/coordkit/coordkit/scenarios/report/reporttest"
)

// twoClaims declares claims "a" (safety) and "b" (timing).
var twoClaims = []Claim{{ID: "a", Kind: Safety, Text: "claim a"}, {ID: "b", Kind: Timing, Text: "claim b"}}

// judged returns a Run that checks the given claims with the given verdicts.
func judged(holds map[ClaimID]bool, ids ...ClaimID) func(context.Context, Env) (*report.Report, error) {
	return func(context.Context, Env) (*report.Report, error) {
		rep := report.New("x", "")
		for _, id := range ids {
			check(rep, id, "e", "o", holds[id])
		}
		return rep, nil
	}
}

func TestScenarioRegistry(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	run := func(context.Context, Env) (*report.Report, error) { return report.New("x", ""), nil }
	require.NoError(t, r.Register(Scenario{Name: "b", Claims: twoClaims, Run: judged(nil, "a", "b")}))
	require.NoError(t, r.Register(Scenario{Name: "a", Claims: twoClaims, Run: run}))
	assert.ErrorIs(t, r.Register(Scenario{Name: "a", Claims: twoClaims, Run: run}), ErrDuplicate)
	assert.ErrorIs(t, r.Register(Scenario{Name: "c", Claims: twoClaims[:1], Run: run}), ErrInvalid)
	assert.ErrorIs(t, r.Register(Scenario{Name: "", Claims: twoClaims, Run: run}), ErrInvalid)
	assert.ErrorIs(t, r.Register(Scenario{Name: "d", Claims: twoClaims}), ErrInvalid)
	assert.Equal(t, []string{"a", "b"}, r.Names())
	assert.Equal(t, "b", r.List()[0].Name, "List keeps registration order")

	_, err := r.Run(context.Background(), "zz", Env{})
	var ue *UnknownError
	require.ErrorAs(t, err, &ue)
	assert.ErrorIs(t, err, ErrUnknownScenario)
	assert.Equal(t, []string{"a", "b"}, ue.Known)

	rep, err := r.Run(context.Background(), "b", Env{Seed: 7})
	require.NoError(t, err)
	assert.Equal(t, "b", rep.Name)
	assert.Equal(t, int64(7), rep.Seed)
	assert.Equal(t, "small", rep.Scale)
	assert.False(t, rep.Passed, "a report with a failed claim does not pass")

	_, err = r.Run(context.Background(), "b", Env{Scale: "huge"})
	assert.ErrorIs(t, err, ErrInvalid)
}

func TestScenarioRegisterRejectsBadClaims(t *testing.T) {
	t.Parallel()
	run := judged(nil)
	for name, claims := range map[string][]Claim{
		"one claim":   twoClaims[:1],
		"no ID":       {{Kind: Safety, Text: "t"}, twoClaims[1]},
		"ID twice":    {twoClaims[0], {ID: "a", Kind: Timing, Text: "t"}},
		"no kind":     {{ID: "x", Text: "t"}, twoClaims[1]},
		"odd kind":    {{ID: "x", Kind: "speed", Text: "t"}, twoClaims[1]},
		"no text":     {{ID: "x", Kind: Safety}, twoClaims[1]},
		"ID w/ space": {{ID: "x y", Kind: Safety, Text: "t"}, twoClaims[1]},
	} {
		t.Run(name, func(t *testing.T) {
			assert.ErrorIs(t, NewRegistry().Register(Scenario{Name: "s", Claims: claims, Run: run}), ErrInvalid)
		})
	}
}

func TestScenarioRunJudgesClaimsByID(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name             string
		checked          []ClaimID
		unchecked, undec []ClaimID
	}{
		{name: "all checked", checked: []ClaimID{"a", "b"}},
		{name: "one checked twice", checked: []ClaimID{"a", "b", "a"}},
		{name: "one unchecked", checked: []ClaimID{"a"}, unchecked: []ClaimID{"b"}},
		{name: "one undeclared", checked: []ClaimID{"a", "b", "z"}, undec: []ClaimID{"z"}},
		{name: "none", unchecked: []ClaimID{"a", "b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRegistry()
			require.NoError(t, r.Register(Scenario{Name: "s", Claims: twoClaims, Run: judged(map[ClaimID]bool{"a": true}, tc.checked...)}))
			rep, err := r.Run(context.Background(), "s", Env{})
			if tc.unchecked == nil && tc.undec == nil {
				require.NoError(t, err)
				assert.Equal(t, "a", rep.Claims[0].ID)
				assert.Equal(t, "claim a", rep.Claims[0].Claim, "the text comes from the declaration")
				assert.Equal(t, "safety", rep.Claims[0].Kind)
				assert.Equal(t, "timing", rep.Claims[1].Kind)
				assert.False(t, rep.Passed, "a failed timing claim fails the report")
				assert.Empty(t, SafetyFailed(rep), "but not the safety verdict")
				return
			}
			var ce *ClaimsError
			require.ErrorAs(t, err, &ce)
			assert.ErrorIs(t, err, ErrClaims)
			assert.Equal(t, tc.unchecked, ce.Unchecked)
			assert.Equal(t, tc.undec, ce.Undeclared)
		})
	}
}

func TestScenarioSafetyFailed(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	require.NoError(t, r.Register(Scenario{Name: "s", Claims: twoClaims, Run: judged(map[ClaimID]bool{"b": true}, "a", "b")}))
	rep, err := r.Run(context.Background(), "s", Env{})
	require.NoError(t, err)
	failed := SafetyFailed(rep)
	require.Len(t, failed, 1)
	assert.Equal(t, "a", failed[0].ID)
}

func TestScenarioRegistryRunError(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	boom := errors.New("boom")
	require.NoError(t, r.Register(Scenario{Name: "x", Claims: twoClaims, Run: func(context.Context, Env) (*report.Report, error) { return nil, boom }}))
	_, err := r.Run(context.Background(), "x", Env{})
	assert.ErrorIs(t, err, boom)
}

func TestScenarioEnvValidate(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		env Env
		ok  bool
	}{
		"zero":          {Env{}, true},
		"full, 3s":      {Env{Scale: ScaleFull, LockTTL: 3 * time.Second}, true},
		"odd scale":     {Env{Scale: "huge"}, false},
		"ttl too short": {Env{LockTTL: time.Second}, false},
		"ttl fraction":  {Env{LockTTL: 2500 * time.Millisecond}, false},
		"sqlite":        {Env{SQLDriver: "sqlite"}, true},
		"postgres dsn":  {Env{SQLDriver: "postgres", SQLDSN: "postgres://h/db"}, true},
		"postgres only": {Env{SQLDriver: "postgres"}, false},
		"dsn only":      {Env{SQLDSN: "x.db"}, false},
		"odd driver":    {Env{SQLDriver: "oracle", SQLDSN: "x"}, false},
	} {
		t.Run(name, func(t *testing.T) {
			err := tc.env.Validate()
			if tc.ok {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, ErrInvalid)
			}
		})
	}
}

// Env.Validate's SQL errors say which field and why, for the CLI's messages.
func TestScenarioEnvSQLError(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		env     Env
		field   string
		dialect sqlfence.Dialect
		want    error
	}{
		"dsn only":        {Env{SQLDSN: "x.db"}, "DSN", 0, ErrSQLNeedsDriver},
		"odd driver":      {Env{SQLDriver: "oracle", SQLDSN: "x"}, "driver", 0, sqlfence.ErrUnknownDialect},
		"postgres only":   {Env{SQLDriver: "postgresql"}, "driver", sqlfence.Postgres, ErrSQLNeedsDSN},
		"sqlite deferred": {Env{SQLDriver: "sqlite", SQLDSN: "file:x.db?_txlock=deferred"}, "DSN", sqlfence.SQLite, sqlfence.ErrUnsafeDSN},
	} {
		t.Run(name, func(t *testing.T) {
			err := tc.env.Validate()
			var se *SQLError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tc.field, se.Field)
			assert.Equal(t, tc.dialect, se.Dialect)
			assert.ErrorIs(t, err, tc.want)
			assert.ErrorIs(t, err, ErrInvalid)
		})
	}
}

func TestScenarioNeedsEtcd(t *testing.T) {
	t.Parallel()
	reg, err := Default()
	require.NoError(t, err)
	_, err = reg.Run(context.Background(), "lock-without-fencing", Env{TempDir: t.TempDir()})
	assert.ErrorIs(t, err, ErrNoEtcd)
}

func TestScenarioDefaultRegistry(t *testing.T) {
	t.Parallel()
	a, err := Default()
	require.NoError(t, err)
	b, err := Default()
	require.NoError(t, err)
	require.NotSame(t, a, b)
	for _, s := range a.List() {
		assert.NotEmpty(t, s.Summary, s.Name)
		assert.GreaterOrEqual(t, len(s.Claims), 2, s.Name)
	}
}

// testEtcd is an EtcdStarter for tests: an etcdtest member, stopped by
// t.Cleanup.
func testEtcd(t *testing.T) EtcdStarter {
	return func(context.Context, string) ([]string, func(), error) {
		return etcdtest.Start(t).Endpoints(), func() {}, nil
	}
}

// requireDrawn checks that rep's HTML page draws something (a timeline or a
// chart, as inline SVG).
func requireDrawn(t *testing.T, rep *report.Report) {
	t.Helper()
	var page bytes.Buffer
	require.NoError(t, report.WriteHTML(&page, rep.Name, []*report.Report{rep}))
	require.Contains(t, page.String(), "<svg")
}

// runScenario runs one scenario of the default registry at small scale and
// checks what every report must have.
func runScenario(t *testing.T, name string, timeout time.Duration, mods ...func(*Env)) *report.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var progress bytes.Buffer
	reg, err := Default()
	require.NoError(t, err)
	env := Env{Seed: 1, Scale: ScaleSmall, TempDir: t.TempDir(), Progress: &progress, StartEtcd: testEtcd(t)}
	for _, mod := range mods {
		mod(&env)
	}
	rep, err := reg.Run(ctx, name, env)
	require.NoError(t, err)
	// Safety claims must hold on any machine; timing claims (latency within
	// a tolerance of a model) are reported but a loaded machine may miss them.
	for _, c := range rep.Claims {
		switch Kind(c.Kind) {
		case Safety:
			assert.True(t, c.Holds, "safety claim %s %q: expected %s, observed %s", c.ID, c.Claim, c.Expected, c.Observed)
		case Timing:
			if !c.Holds {
				t.Logf("timing claim %s does not hold on this run (not a failure): expected %s, observed %s", c.ID, c.Expected, c.Observed)
			}
		default:
			t.Errorf("claim %s has kind %q", c.ID, c.Kind)
		}
	}
	assert.Empty(t, SafetyFailed(rep))
	assert.GreaterOrEqual(t, len(rep.Claims), 2)
	assert.Equal(t, rep.Passed, len(rep.Failed()) == 0)
	var text, page bytes.Buffer
	require.NoError(t, report.WriteText(&text, rep))
	require.NoError(t, report.WriteHTML(&page, name, []*report.Report{rep}))
	reporttest.CheckHTML(t, page.Bytes())
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"claims":[{"id":"`)
	if dir := os.Getenv("SCENARIO_SHOW"); dir != "" {
		// For a look while developing: SCENARIO_SHOW=/tmp go test -run X -v
		t.Logf("report:\n%s", text.String())
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".html"), page.Bytes(), 0o644))
	}
	if t.Failed() {
		t.Logf("report:\n%s\nprogress:\n%s", text.String(), progress.String())
	}
	return rep
}

func TestScenarioLamportClocks(t *testing.T) {
	t.Parallel()
	rep := runScenario(t, "lamport-clocks", 30*time.Second)
	v, _ := rep.Metrics.Get("order_violations")
	assert.Zero(t, v)
	assert.Len(t, rep.Claims, 4)
}

func TestScenarioLamportUniqueness(t *testing.T) {
	t.Parallel()
	rep := runScenario(t, "lamport-uniqueness", 60*time.Second)
	require.Len(t, rep.Claims, 4)
	require.NotNil(t, rep.Timeline)
	v, _ := rep.Metrics.Get("cas_rounds_with_one_winner")
	assert.Equal(t, 20.0, v)
}

func TestScenarioLockWithoutFencing(t *testing.T) {
	t.Parallel()
	rep := runScenario(t, "lock-without-fencing", 60*time.Second)
	require.Len(t, rep.Claims, 4)
	requireDrawn(t, rep) // the demo's tour shows this page
	a, _ := rep.Metrics.Get("token_a")
	b, _ := rep.Metrics.Get("token_b")
	assert.Greater(t, b, a)
	realRedis, ok := rep.Metrics.Get("redis_lock_real")
	assert.True(t, ok)
	assert.Zero(t, realRedis, "without Env.Redis the Redis round is the model")
	assert.Contains(t, strings.Join(rep.Notes, "\n"), "a model of a Redis lock")
}

// The Redis round on the real Redis: the same two writers, the report says
// so, and the run's keys are gone.
func TestScenarioLockWithoutFencingRealRedis(t *testing.T) {
	t.Parallel()
	addr := redistest.Addr(t)
	rep := runScenario(t, "lock-without-fencing", 60*time.Second, func(e *Env) { e.Redis = addr })
	require.Len(t, rep.Claims, 4)
	realRedis, _ := rep.Metrics.Get("redis_lock_real")
	assert.Equal(t, 1.0, realRedis)
	notes := strings.Join(rep.Notes, "\n")
	assert.Contains(t, notes, "a real Redis lock: redsync v4 over go-redis on Redis "+addr)
	m := regexp.MustCompile(`keys under (coordkit:scenario-lock-without-fencing:[0-9a-f]+:)`).FindStringSubmatch(notes)
	require.NotNil(t, m, notes)
	c, _ := redistest.Client(t, "scenarios-test")
	keys, err := c.Keys(context.Background(), m[1]+"*").Result()
	require.NoError(t, err)
	assert.Empty(t, keys, "the run deleted its keys")
}

func TestScenarioLockWithoutFencingRedisUnreachable(t *testing.T) {
	t.Parallel()
	addr := nettest.ClosedAddr(t)
	reg, err := Default()
	require.NoError(t, err)
	_, err = reg.Run(context.Background(), "lock-without-fencing", Env{TempDir: t.TempDir(), StartEtcd: testEtcd(t), Redis: addr})
	require.Error(t, err)
	assert.Contains(t, err.Error(), addr)
}

func TestScenarioStaleRead(t *testing.T) {
	t.Parallel()
	rep := runScenario(t, "stale-read", 60*time.Second)
	require.Len(t, rep.Claims, 4)
	require.NotNil(t, rep.Timeline)
	assert.Len(t, rep.Timeline.Lanes, 3)
}

func TestScenarioQuorumLoss(t *testing.T) {
	t.Parallel()
	rep := runScenario(t, "quorum-loss", 60*time.Second)
	require.Len(t, rep.Claims, 5)
}

func TestScenarioMinorityPartition(t *testing.T) {
	t.Parallel()
	rep := runScenario(t, "minority-partition", 60*time.Second)
	require.Len(t, rep.Claims, 5)
	requireDrawn(t, rep) // the demo's tour shows this page
}

func TestScenarioEvenSplit(t *testing.T) {
	t.Parallel()
	rep := runScenario(t, "even-split", 90*time.Second)
	require.Len(t, rep.Claims, 4)
	require.Len(t, rep.Tables, 1)
	assert.Len(t, rep.Tables[0].Rows, 7)
}

func TestScenarioWriteCost(t *testing.T) {
	t.Parallel()
	rep := runScenario(t, "write-cost", 90*time.Second)
	require.Len(t, rep.Claims, 3)
	requireDrawn(t, rep) // the demo's tour shows this page
	require.Len(t, rep.Charts, 2)
}

func TestScenarioTwoDC(t *testing.T) {
	t.Parallel()
	rep := runScenario(t, "two-dc", 60*time.Second)
	require.Len(t, rep.Claims, 3)
}

func TestScenarioReadLadder(t *testing.T) {
	t.Parallel()
	rep := runScenario(t, "read-ladder", 60*time.Second)
	require.Len(t, rep.Claims, 4)
}

func TestScenarioTwoPhaseCommit(t *testing.T) {
	t.Parallel()
	rep := runScenario(t, "two-phase-commit", 60*time.Second)
	require.Len(t, rep.Claims, 4)
}

func TestScenarioLeaderFailover(t *testing.T) {
	t.Parallel()
	rep := runScenario(t, "leader-failover", 60*time.Second)
	require.Len(t, rep.Claims, 4)
}

func TestScenarioFencedSQL(t *testing.T) {
	t.Parallel()
	rep := runScenario(t, "fenced-sql", 60*time.Second)
	require.Len(t, rep.Claims, 4)
	requireDrawn(t, rep) // the demo's tour shows this page
	a, _ := rep.Metrics.Get("token_a")
	b, _ := rep.Metrics.Get("token_b")
	floor, _ := rep.Metrics.Get("floor_after")
	assert.Greater(t, b, a)
	assert.Equal(t, b, floor)
}

// fenced-sql on the shared servers, each in a fresh database: the tables it
// creates there are dropped at the end.
func TestScenarioFencedSQLServers(t *testing.T) {
	t.Parallel()
	for _, d := range []sqlfence.Dialect{sqlfence.Postgres, sqlfence.MySQL} {
		t.Run(d.String(), func(t *testing.T) {
			db := sqltest.Open(t, d)
			rep := runScenario(t, "fenced-sql", 60*time.Second, func(e *Env) { e.SQLDriver, e.SQLDSN = db.Driver, db.DSN })
			require.Len(t, rep.Claims, 4)
			var tables int
			q := "SELECT COUNT(*) FROM information_schema.tables WHERE table_name LIKE 'coordkit_scn_%'"
			if d == sqlfence.MySQL {
				q += " AND table_schema = DATABASE()"
			}
			require.NoError(t, db.QueryRow(q).Scan(&tables))
			assert.Zero(t, tables, "the run drops its tables")
		})
	}
}
