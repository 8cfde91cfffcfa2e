package root

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
	"github.com/coordkit/coordkit/internal/nettest"
)

// electBuffer is a writer tests can read while a command writes to it.
type electBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	lines chan string
	part  string
}

func newElectBuffer() *electBuffer { return &electBuffer{lines: make(chan string, 100)} }

func (b *electBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	b.part += string(p)
	for {
		i := strings.IndexByte(b.part, '\n')
		if i < 0 {
			break
		}
		b.lines <- b.part[:i]
		b.part = b.part[i+1:]
	}
	return len(p), nil
}

func (b *electBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *electBuffer) line(t *testing.T) string {
	t.Helper()
	select {
	case l := <-b.lines:
		return l
	case <-time.After(15 * time.Second):
		t.Fatalf("no output line within 15s; have %q", b.String())
		return ""
	}
}

// electRun runs coordctl in-process in a goroutine with readable streams.
type electRun struct {
	out, errOut *electBuffer
	code        chan int
}

func startElectInProcess(ctx context.Context, endpoint string, args ...string) *electRun {
	r := &electRun{out: newElectBuffer(), errOut: newElectBuffer(), code: make(chan int, 1)}
	env := map[string]string{"COORDCTL_ENDPOINTS": endpoint}
	go func() {
		r.code <- run(ctx, args, cmdutil.IOStreams{In: bytes.NewReader(nil), Out: r.out, ErrOut: r.errOut}, func(k string) string { return env[k] })
	}()
	return r
}

func (r *electRun) wait(t *testing.T) int {
	t.Helper()
	select {
	case c := <-r.code:
		return c
	case <-time.After(20 * time.Second):
		t.Fatalf("coordctl did not exit; stderr %q", r.errOut.String())
		return -1
	}
}

type electJSON struct {
	Event  string  `json:"event"`
	Name   string  `json:"name"`
	ID     string  `json:"id"`
	Token  uint64  `json:"token"`
	Reason string  `json:"reason"`
	Leader *string `json:"leader"`
}

func decodeElect(t *testing.T, line string) electJSON {
	t.Helper()
	var ev electJSON
	require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
	return ev
}

func TestElectCmdUsageErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no name", []string{"elect"}, "accepts between 1 and 2 arg"},
		{"too many args", []string{"elect", "a", "b", "c"}, "accepts between 1 and 2 arg"},
		{"short ttl", []string{"elect", "svc", "--ttl", "500ms"}, "--ttl"},
		{"proposal and id", []string{"elect", "svc", "p", "--id", "x"}, "either PROPOSAL or --id"},
		{"observe with id", []string{"elect", "svc", "--observe", "--id", "x"}, "--observe"},
		{"unknown flag", []string{"elect", "svc", "--bogus"}, "unknown flag"},
		{"bad ttl", []string{"elect", "svc", "--ttl", "soon"}, "invalid argument"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := runInProcess(context.Background(), map[string]string{"COORDCTL_ENDPOINTS": "127.0.0.1:1"}, tc.args...)
			require.Equal(t, cmdutil.ExitUsage, res.Code, res.Stderr)
			require.Contains(t, res.Stderr, tc.want)
		})
	}
}

func TestElectCmdUnreachableEtcdExits1InTime(t *testing.T) {
	t.Parallel()
	dead := nettest.ClosedAddr(t)
	start := time.Now()
	res := runInProcess(context.Background(), nil, "--endpoints", dead, "--dial-timeout", "500ms", "elect", "svc")
	require.Equal(t, cmdutil.ExitError, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, dead)
	require.Less(t, time.Since(start), 1500*time.Millisecond)
}

func TestElectCmdHoldsThenResignsOnSignal(t *testing.T) {
	t.Parallel()
	srv, cli := etcdtest.StartWithClient(t)
	ep := srv.Endpoints()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Someone else leads first, so coordctl has to wait.
	other, err := election.New(cli, "svc")
	require.NoError(t, err)
	defer other.Close()
	first, err := other.Campaign(ctx, "library")
	require.NoError(t, err)

	sigctx, signal := context.WithCancel(ctx)
	r := startElectInProcess(sigctx, ep, "-w", "json", "elect", "svc", "--id", "node-1", "--ttl", "5s")
	require.Contains(t, r.errOut.line(t), "waiting to be elected (leader now: library, token ")
	waitForKeys(t, cli, "svc/", 2)
	require.NoError(t, first.Resign(ctx))
	ev := decodeElect(t, r.out.line(t))
	require.Equal(t, electJSON{Event: "elected", Name: "svc", ID: "node-1", Token: ev.Token}, ev)
	require.Greater(t, ev.Token, uint64(first.Token()))
	leader, err := other.Leader(ctx)
	require.NoError(t, err)
	require.Equal(t, "node-1", leader.Value)
	require.EqualValues(t, ev.Token, leader.Token)

	signal() // SIGINT/SIGTERM: resign and exit 0
	require.Equal(t, cmdutil.ExitOK, r.wait(t), r.errOut.String())
	_, err = other.Leader(ctx)
	require.ErrorIs(t, err, election.ErrNoLeader, "coordctl resigned")
}

func TestElectCmdSignalWhileWaitingWithdraws(t *testing.T) {
	t.Parallel()
	srv, cli := etcdtest.StartWithClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	other, err := election.New(cli, "svc")
	require.NoError(t, err)
	defer other.Close()
	l, err := other.Campaign(ctx, "library")
	require.NoError(t, err)
	sigctx, signal := context.WithCancel(ctx)
	r := startElectInProcess(sigctx, srv.Endpoints()[0], "elect", "svc")
	waitForKeys(t, cli, "svc/", 2)
	signal()
	require.Equal(t, cmdutil.ExitOK, r.wait(t), r.errOut.String())
	require.Empty(t, r.out.String(), "never elected")
	waitForKeys(t, cli, "svc/", 1) // the candidate key is gone
	require.True(t, l.Alive())
}

func TestElectCmdProposalAndSimpleOutput(t *testing.T) {
	t.Parallel()
	srv, _ := etcdtest.StartWithClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sigctx, signal := context.WithCancel(ctx)
	r := startElectInProcess(sigctx, srv.Endpoints()[0], "elect", "svc", "http://10.0.0.7:8080")
	line := r.out.line(t)
	require.Regexp(t, `^elected leader of svc as http://10\.0\.0\.7:8080 \(token \d+\)$`, line)
	signal()
	require.Equal(t, cmdutil.ExitOK, r.wait(t))
}

func TestElectCmdLossExits4(t *testing.T) {
	t.Parallel()
	srv, cli := etcdtest.StartWithClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := startElectInProcess(ctx, srv.Endpoints()[0], "-w", "json", "elect", "svc", "--id", "n1")
	ev := decodeElect(t, r.out.line(t))
	require.Equal(t, "elected", ev.Event)
	resp := waitForKeys(t, cli, "svc/", 1)
	_, err := cli.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease))
	require.NoError(t, err)
	lost := decodeElect(t, r.out.line(t))
	require.Equal(t, "lost", lost.Event)
	require.Equal(t, ev.Token, lost.Token)
	require.NotEmpty(t, lost.Reason)
	require.Equal(t, cmdutil.ExitLost, r.wait(t))
	require.Contains(t, r.errOut.String(), "lost leadership of svc")
}

func TestElectCmdObserve(t *testing.T) {
	t.Parallel()
	srv, cli := etcdtest.StartWithClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sigctx, signal := context.WithCancel(ctx)
	r := startElectInProcess(sigctx, srv.Endpoints()[0], "-w", "json", "elect", "svc", "--observe")
	require.Equal(t, electJSON{Event: "leader"}, decodeElect(t, r.out.line(t)), "no leader at first: null")

	e, err := election.New(cli, "svc")
	require.NoError(t, err)
	defer e.Close()
	l, err := e.Campaign(ctx, "node-a")
	require.NoError(t, err)
	ev := decodeElect(t, r.out.line(t))
	require.NotNil(t, ev.Leader)
	require.Equal(t, "node-a", *ev.Leader)
	require.EqualValues(t, l.Token(), ev.Token)
	require.NoError(t, l.Resign(ctx))
	ev = decodeElect(t, r.out.line(t))
	require.Nil(t, ev.Leader)
	require.Zero(t, ev.Token)
	require.Contains(t, r.out.String(), `{"event":"leader","leader":null,"token":0}`)
	signal()
	require.Equal(t, cmdutil.ExitOK, r.wait(t))
}

func waitForKeys(t *testing.T, cli *clientv3.Client, prefix string, n int) *clientv3.GetResponse {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := cli.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
		require.NoError(t, err)
		if len(resp.Kvs) == n {
			return resp
		}
		if time.Now().After(deadline) {
			t.Fatalf("want %d keys under %q, have %d", n, prefix, len(resp.Kvs))
		}
		time.Sleep(5 * time.Millisecond) // polling etcd: no event to await from outside coordctl
	}
}
