package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
	"github.com/coordkit/coordkit/internal/sidecar"
)

// End-to-end tests of coordinated election with real sidecar processes:
// resign-to, preemption, a candidate that freezes (or a leader that is
// killed) in the middle of a handover, and a concurrency.Election on the
// same name.

// post sends POST path with a JSON content type; it returns the status and body.
func (p *sidecarProc) post(t *testing.T, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, p.url+path, strings.NewReader("{}"))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	hc := &http.Client{Transport: p.http.Transport, Timeout: 30 * time.Second}
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func (p *sidecarProc) candidates(t *testing.T) []election.Candidate {
	t.Helper()
	resp, err := p.http.Get(p.url + "/v1/candidates")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var v sidecar.CandidatesView
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
	return v.Candidates
}

// awaitQueued polls p's /v1/candidates until n candidates are queued.
func (p *sidecarProc) awaitQueued(t *testing.T, n int) []election.Candidate {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		cs := p.candidates(t)
		if len(cs) == n {
			return cs
		}
		if time.Now().After(deadline) {
			t.Fatalf("want %d candidates, have %d: %+v", n, len(cs), cs)
		}
		// Poll: queueing is another process's act, with no event to await here.
		time.Sleep(20 * time.Millisecond)
	}
}

// leaderLog follows the election from the test process and records every
// leader value in order.
type e2eLeaderLog struct {
	ch   <-chan election.Observation
	seen []string
}

func followLeaders(t *testing.T, cli *clientv3.Client, name string) *e2eLeaderLog {
	t.Helper()
	e, err := election.New(cli, name)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return &e2eLeaderLog{ch: e.Observe(ctx)}
}

// until reads until the leader is want and returns the leaders seen, with
// "" for no leader (none before the first leader is kept).
func (g *e2eLeaderLog) until(t *testing.T, want string, d time.Duration) []string {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case obs, ok := <-g.ch:
			require.True(t, ok)
			require.NoError(t, obs.Err)
			v := ""
			if obs.Leader != nil {
				v = obs.Leader.Value
			}
			if (len(g.seen) > 0 || v != "") && (len(g.seen) == 0 || g.seen[len(g.seen)-1] != v) {
				g.seen = append(g.seen, v)
			}
			if v == want {
				return g.seen
			}
		case <-timeout:
			t.Fatalf("leader %s not seen within %s; seen %v", want, d, g.seen)
		}
	}
}

func noLine(t *testing.T, p *sidecarProc, event string) {
	t.Helper()
	for {
		select {
		case m, ok := <-p.lines:
			if !ok {
				return
			}
			require.NotEqual(t, event, m["event"], "sidecar %s: unexpected %s: %v", p.id, event, m)
		default:
			return
		}
	}
}

func TestCoordE2EResignToAndCandidates(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end")
	}
	srv := etcdtest.Start(t)
	eps := srv.Endpoints()
	log := followLeaders(t, etcdtest.Client(t, srv), "rt")
	a := startSidecarProc(t, nil, eps, "rt", "a", "--version", "1.0.0", "--label", "zone=z1")
	el := a.awaitLine(t, "elected", 10*time.Second)
	b := startSidecarProc(t, nil, eps, "rt", "b", "--version", "1.0.0")
	c := startSidecarProc(t, nil, eps, "rt", "c", "--version", "1.1.0")
	cs := b.awaitQueued(t, 3)
	require.Equal(t, []string{"a", "b", "c"}, []string{cs[0].ID(), cs[1].ID(), cs[2].ID()})
	require.True(t, cs[0].Leader)
	require.Equal(t, "z1", cs[0].Attributes.Labels["zone"])
	require.Equal(t, "1.1.0", cs[2].Attributes.Version)
	require.Equal(t, election.PolicyFirstCome, cs[2].Policy)

	st, body := b.post(t, "/v1/resign?to=best")
	require.Equal(t, http.StatusConflict, st, "a standby cannot resign: %s", body)
	st, body = a.post(t, "/v1/resign?to=nobody")
	require.Equal(t, http.StatusNotFound, st, body)
	st, body = a.post(t, "/v1/resign?to=")
	require.Equal(t, http.StatusBadRequest, st, body)
	require.Equal(t, 200, a.status(t, "/readyz"), "a failed resign-to keeps the leadership")

	st, body = a.post(t, "/v1/resign?to=c")
	require.Equal(t, http.StatusOK, st, body)
	cl := c.awaitLine(t, "elected", 10*time.Second)
	require.Greater(t, cl["token"].(float64), el["token"].(float64))
	require.Equal(t, []string{"a", "c"}, log.until(t, "c", 10*time.Second), "nobody led between a and c")
	noLine(t, b, "elected")
	cs = c.awaitQueued(t, 2) // a stands aside for a TTL
	require.Equal(t, "c", cs[0].ID())
	require.Greater(t, cs[1].Token, cs[0].Token, "b re-queued behind c")
}

func TestCoordE2EPreemption(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end")
	}
	srv := etcdtest.Start(t)
	eps := srv.Endpoints()
	log := followLeaders(t, etcdtest.Client(t, srv), "pre")
	a := startSidecarProc(t, nil, eps, "pre", "a", "--policy", "priority", "--priority", "1")
	el := a.awaitLine(t, "elected", 10*time.Second)
	b := startSidecarProc(t, nil, eps, "pre", "b", "--policy", "priority", "--priority", "1")
	b.awaitQueued(t, 2)
	c := startSidecarProc(t, nil, eps, "pre", "c", "--policy", "priority", "--priority", "5")
	cl := c.awaitLine(t, "elected", 10*time.Second)
	require.Greater(t, cl["token"].(float64), el["token"].(float64))
	lost := a.awaitLine(t, "lost", 5*time.Second)
	require.Contains(t, lost["reason"], "handed over")
	require.Equal(t, []string{"a", "c"}, log.until(t, "c", 10*time.Second), "b, queued between, did not lead")
	noLine(t, b, "elected")
	// With --no-preempt a preferred one waits for a resign-to-best.
	d := startSidecarProc(t, nil, eps, "pre", "d", "--policy", "priority", "--priority", "9", "--no-preempt")
	d.awaitQueued(t, 4) // a is back in the queue too
	require.Equal(t, 200, c.status(t, "/readyz"), "a no-preempt candidate does not take over")
	st, body := c.post(t, "/v1/resign?to=best")
	require.Equal(t, http.StatusOK, st, body)
	d.awaitLine(t, "elected", 10*time.Second)
	require.Equal(t, []string{"a", "c", "d"}, log.until(t, "d", 10*time.Second))
}

// A candidate between the leader and the target freezes (SIGSTOP: it can
// neither re-queue nor keep its lease): the leader keeps leading until the
// frozen one's lease expires, then hands over; the frozen one never leads.
// Then the same with the leader killed -9 while it waits: the target leads
// once both leases expired, and nobody else in between.
func TestCoordE2ECrashMidHandover(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end")
	}
	srv := etcdtest.Start(t)
	eps := srv.Endpoints()
	cli := etcdtest.Client(t, srv)
	for _, killLeader := range []bool{false, true} {
		name := map[bool]string{false: "frozen", true: "killed"}[killLeader]
		t.Run(name, func(t *testing.T) {
			log := followLeaders(t, cli, name)
			a := startSidecarProc(t, nil, eps, name, "a", "--ttl", "2s")
			el := a.awaitLine(t, "elected", 10*time.Second)
			b := startSidecarProc(t, nil, eps, name, "b", "--ttl", "2s")
			b.awaitQueued(t, 2)
			c := startSidecarProc(t, nil, eps, name, "c", "--ttl", "2s")
			c.awaitQueued(t, 3)
			b.signal(t, syscall.SIGSTOP)
			defer b.signal(t, syscall.SIGCONT)
			resigned := make(chan int, 1)
			go func() {
				req, _ := http.NewRequest(http.MethodPost, a.url+"/v1/resign?to=c", strings.NewReader("{}"))
				req.Header.Set("Content-Type", "application/json")
				resp, err := (&http.Client{Transport: a.http.Transport, Timeout: 30 * time.Second}).Do(req)
				if err != nil {
					resigned <- -1
					return
				}
				resp.Body.Close()
				resigned <- resp.StatusCode
			}()
			if killLeader {
				// Kill a once its handover is under way (the record written).
				awaitHandoverRecord(t, cli, name)
				a.signal(t, syscall.SIGKILL)
				a.wait(t, 10*time.Second)
			}
			cl := c.awaitLine(t, "elected", 20*time.Second)
			require.Greater(t, cl["token"].(float64), el["token"].(float64))
			require.Equal(t, []string{"a", "c"}, log.until(t, "c", 10*time.Second), "the frozen candidate never led")
			if !killLeader {
				require.Equal(t, http.StatusOK, <-resigned)
			}
		})
	}
}

func awaitHandoverRecord(t *testing.T, cli *clientv3.Client, name string) {
	t.Helper()
	key := name + "\x00coord/handover"
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := cli.Get(context.Background(), key)
		require.NoError(t, err)
		if len(resp.Kvs) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no handover record")
		}
		time.Sleep(10 * time.Millisecond) // another process writes it
	}
}

// A concurrency.Election (what etcdctl elect uses) on the same name: while
// it leads no sidecar is ready; a preferred sidecar queued behind it does
// not make our leader hand over past it; once it is gone, the preferred
// one takes over.
func TestCoordE2EForeignParticipant(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end")
	}
	srv := etcdtest.Start(t)
	eps := srv.Endpoints()
	cli := etcdtest.Client(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(10))
	require.NoError(t, err)
	defer sess.Close()
	theirs := concurrency.NewElection(sess, "mixed")
	require.NoError(t, theirs.Campaign(ctx, "etcdctl"))
	a := startSidecarProc(t, nil, eps, "mixed", "a", "--policy", "priority", "--priority", "1")
	cs := a.awaitQueued(t, 2)
	require.Nil(t, cs[0].Attributes, "a foreign candidate publishes no attributes")
	require.Equal(t, 503, a.status(t, "/readyz"), "no sidecar leads while etcdctl does")
	require.NoError(t, theirs.Resign(ctx))
	el := a.awaitLine(t, "elected", 10*time.Second)

	// etcdctl queues again, then a preferred sidecar behind it.
	theirWin := make(chan error, 1)
	go func() { theirWin <- theirs.Campaign(ctx, "etcdctl") }()
	a.awaitQueued(t, 2)
	c := startSidecarProc(t, nil, eps, "mixed", "c", "--policy", "priority", "--priority", "9")
	a.awaitQueued(t, 3)
	st, body := a.post(t, "/v1/resign?to=c")
	require.Equal(t, http.StatusConflict, st, "a handover past a foreign candidate is refused: %s", body)
	require.Equal(t, 200, a.status(t, "/readyz"), "and the leader keeps leading, not yielding past etcdctl")
	select {
	case err := <-theirWin:
		t.Fatalf("concurrency.Election won while a leads: %v", err)
	default:
	}
	// a steps down plainly: etcdctl leads, then resigns; c, preferred, leads.
	st, body = a.post(t, "/v1/resign")
	require.Equal(t, http.StatusOK, st, body)
	require.NoError(t, <-theirWin)
	require.Equal(t, 503, c.status(t, "/readyz"))
	require.NoError(t, theirs.Resign(ctx))
	cl := c.awaitLine(t, "elected", 10*time.Second)
	require.Greater(t, cl["token"].(float64), el["token"].(float64))
}

// coordctl bench elect --rolling 3 with real sidecar processes: counts
// that do not depend on load (first-come changes once per restart of the
// leader, newest-version at most twice; no overlap; tokens in order), the
// table's rows and a timeline per roll.
func TestCoordE2EBenchRolling(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end")
	}
	cmd := exec.Command(coordctlBinary(t), "-w", "json", "bench", "elect", "--rolling", "3", "--preempt-rounds", "2")
	out, err := cmd.Output()
	require.NoError(t, err, "%s", out)
	var res struct {
		Benchmark string `json:"benchmark"`
		Replicas  int    `json:"replicas"`
		Rows      []struct {
			Metric    string   `json:"metric"`
			FirstCome *float64 `json:"first_come"`
			Newest    *float64 `json:"newest_version_prestop"`
		} `json:"rows"`
		Timelines map[string]struct {
			Lanes []struct {
				Name string `json:"name"`
			} `json:"lanes"`
		} `json:"timelines"`
	}
	require.NoError(t, json.Unmarshal(out, &res), "%s", out)
	require.Equal(t, "elect-rolling", res.Benchmark)
	rows := map[string][2]*float64{}
	for _, r := range res.Rows {
		rows[r.Metric] = [2]*float64{r.FirstCome, r.Newest}
	}
	require.Equal(t, 3.0, *rows["leadership_changes"][0], "first-come: once per restart of the leader")
	require.LessOrEqual(t, *rows["leadership_changes"][1], 2.0)
	for _, m := range []string{"overlapping_leaders", "tokens_decreasing"} {
		require.Zero(t, *rows[m][0], m)
		require.Zero(t, *rows[m][1], m)
	}
	require.Nil(t, rows["preempt_p50_ms"][0])
	require.Positive(t, *rows["preempt_p50_ms"][1])
	require.Len(t, res.Timelines, 2)
	require.Len(t, res.Timelines["newest_version_prestop"].Lanes, 3)
}
