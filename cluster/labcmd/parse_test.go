package labcmd_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/cluster"
	"github.com/coordkit/coordkit/cluster/labcmd"
)

func TestLabParse(t *testing.T) {
	cases := []struct {
		line string
		want labcmd.Command
	}{
		{"", labcmd.Command{}},
		{"   # only a comment", labcmd.Command{}},
		{"status # trailing comment", labcmd.Command{Name: "status"}},
		{"leader ignored words", labcmd.Command{Name: "leader"}},
		{"put x 1", labcmd.Command{Name: "put", Key: "x", Value: "1"}},
		{`put "a key" "two words" --via leader`, labcmd.Command{Name: "put", Key: "a key", Value: "two words", Nodes: []labcmd.NodeRef{labcmd.NodeLeader}}},
		{"get x", labcmd.Command{Name: "get", Key: "x", Mode: cluster.ReadIndex}},
		{"get x --node 3 --mode stale", labcmd.Command{Name: "get", Key: "x", Mode: cluster.ReadStale, Nodes: []labcmd.NodeRef{"3"}}},
		{"cas k a b", labcmd.Command{Name: "cas", Key: "k", Old: "a", New: "b"}},
		{"delete k", labcmd.Command{Name: "delete", Key: "k"}},
		{"partition leader|2,3", labcmd.Command{Name: "partition", Groups: "leader|2,3"}},
		{"isolate paused", labcmd.Command{Name: "isolate", Nodes: []labcmd.NodeRef{labcmd.NodePaused}}},
		{"cut 1 2", labcmd.Command{Name: "cut", Nodes: []labcmd.NodeRef{"1", "2"}}},
		{"delay 1 2 5ms --jitter 1ms", labcmd.Command{Name: "delay", Nodes: []labcmd.NodeRef{"1", "2"}, Duration: 5 * time.Millisecond, Jitter: time.Millisecond}},
		{"crash 2", labcmd.Command{Name: "crash", Nodes: []labcmd.NodeRef{"2"}}},
		{"pause leader 300ms", labcmd.Command{Name: "pause", Nodes: []labcmd.NodeRef{labcmd.NodeLeader}, Duration: 300 * time.Millisecond}},
		{"wait 1s", labcmd.Command{Name: "wait", Duration: time.Second}},
		{"wait leader", labcmd.Command{Name: "wait", WaitLeader: true}},
		{"bench writes 20 --concurrency 4", labcmd.Command{Name: "bench", Count: 20, Concurrency: 4}},
		{"history h.html", labcmd.Command{Name: "history", File: "h.html"}},
		{"quit", labcmd.Command{Name: "exit"}},
	}
	for _, tc := range cases {
		t.Run(tc.line, func(t *testing.T) {
			got, err := labcmd.Parse(tc.line)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	cmd, err := labcmd.Parse("exit now")
	require.NoError(t, err)
	require.True(t, cmd.Exit())
}

func TestLabParseErrors(t *testing.T) {
	cases := []struct {
		line string
		cmd  string // ParseError.Cmd
		is   error
		msg  string // the text the shell prints after "error: "
	}{
		{"frobnicate x", "frobnicate", labcmd.ErrUnknownCommand, `unknown command "frobnicate" (try help)`},
		{`put "x`, "", labcmd.ErrUsage, "usage: unterminated quote"},
		{"status now", "status", labcmd.ErrUsage, "usage: status"},
		{"put x", "put", labcmd.ErrUsage, "usage: put K V [--via N]"},
		{"put x 1 --bogus", "put", labcmd.ErrUsage, "usage: put: unknown flag: --bogus"},
		{"put x 1 --via one", "put", labcmd.ErrUsage, `usage: bad node "one"`},
		{"get", "get", labcmd.ErrUsage, "usage: get K [--node N] [--mode M]"},
		{"get x --mode fast", "get", cluster.ErrBadMode, `cluster: unknown read mode "fast" (want stale, lease, verify, readindex or log)`},
		{"get x --node x1", "get", labcmd.ErrUsage, `usage: bad node "x1"`},
		{"cas x 1", "cas", labcmd.ErrUsage, "usage: cas K OLD NEW"},
		{"delete", "delete", labcmd.ErrUsage, "usage: delete K"},
		{"partition 1 2", "partition", labcmd.ErrUsage, "usage: partition A|B[|C], e.g. partition 1,2|3,4,5"},
		{"isolate", "isolate", labcmd.ErrUsage, "usage: isolate N"},
		{"cut 1", "cut", labcmd.ErrUsage, "usage: cut N M [--both]"},
		{"cut 1 two", "cut", labcmd.ErrUsage, `usage: bad node "two"`},
		{"delay 1 2", "delay", labcmd.ErrUsage, "usage: delay N M D [--jitter J]"},
		{"delay 1 2 soon", "delay", labcmd.ErrUsage, `usage: bad duration "soon"`},
		{"delay 1 2 -5ms", "delay", labcmd.ErrUsage, `usage: delay: -5ms is not a flag: a duration or count cannot be negative, and a value that starts with "-" goes after --`},
		{"bench writes -3", "bench", labcmd.ErrUsage, `usage: bench: -3 is not a flag: a duration or count cannot be negative, and a value that starts with "-" goes after --`},
		{"delay 1 2 1ms --jitter lots", "delay", labcmd.ErrUsage, `usage: delay: invalid argument "lots" for "--jitter" flag: time: invalid duration "lots"`},
		{"restart", "restart", labcmd.ErrUsage, "usage: restart N"},
		{"resume 1 2", "resume", labcmd.ErrUsage, "usage: resume N"},
		{"pause 1", "pause", labcmd.ErrUsage, "usage: pause N D"},
		{"pause 1 -5ms", "pause", labcmd.ErrUsage, `usage: bad duration "-5ms"`},
		{"wait", "wait", labcmd.ErrUsage, "usage: wait D | wait leader"},
		{"wait forever", "wait", labcmd.ErrUsage, `usage: bad duration "forever"`},
		{"bench reads 3", "bench", labcmd.ErrUsage, "usage: bench writes N [--concurrency C]"},
		{"bench writes x", "bench", labcmd.ErrUsage, "usage: bench writes N [--concurrency C]: N and C must be positive"},
		{"bench writes 3 --concurrency 0", "bench", labcmd.ErrUsage, "usage: bench writes N [--concurrency C]: N and C must be positive"},
		{"history", "history", labcmd.ErrUsage, "usage: history FILE.json|FILE.html"},
		{"timeline a b", "timeline", labcmd.ErrUsage, "usage: timeline FILE.json"},
		{"links x", "links", labcmd.ErrUsage, "usage: links"},
	}
	for _, tc := range cases {
		t.Run(tc.line, func(t *testing.T) {
			_, err := labcmd.Parse(tc.line)
			require.ErrorIs(t, err, tc.is)
			var pe *labcmd.ParseError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, tc.cmd, pe.Cmd)
			require.Equal(t, tc.msg, err.Error())
		})
	}
}

// Every command the help lists parses by that name, and only documented
// names parse: one table drives both.
func TestLabHelpMatchesParser(t *testing.T) {
	seen := map[string]bool{}
	for _, usage := range labcmd.Commands() {
		name := strings.Fields(usage)[0]
		seen[name] = true
		_, err := labcmd.Parse(name)
		require.NotErrorIs(t, err, labcmd.ErrUnknownCommand, usage)
	}
	help := labcmd.Help()
	for name := range seen {
		if name != "exit" {
			require.Contains(t, help, " "+name+" ", "the long help describes %s", name)
		}
	}
	for _, line := range strings.Split(strings.TrimSuffix(help, "\n"), "\n") {
		require.True(t, strings.HasPrefix(line, "  "), "%q", line)
		require.LessOrEqual(t, len([]rune(line)), 82, "%q", line)
	}
}

// Parsing does not depend on what a caller does with its copy of the read
// modes.
func TestLabParseReadModesIsACopy(t *testing.T) {
	modes := cluster.ReadModes()
	modes[0] = "fast"
	_, err := labcmd.Parse("get x --mode fast")
	require.ErrorIs(t, err, cluster.ErrBadMode)
	cmd, err := labcmd.Parse("get x --mode stale")
	require.NoError(t, err)
	require.Equal(t, cluster.ReadStale, cmd.Mode)
}

func TestLabExecErrors(t *testing.T) {
	_, err := labcmd.NewSession(nil)
	require.ErrorIs(t, err, labcmd.ErrNilCluster)

	cfg := cluster.DefaultConfig()
	cfg.Nodes = 3
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := cluster.New(ctx, cfg)
	require.NoError(t, err)
	defer c.Close()
	sess, err := labcmd.NewSession(c)
	require.NoError(t, err)
	exec := func(line string) (labcmd.Result, error) {
		t.Helper()
		cmd, err := labcmd.Parse(line)
		require.NoError(t, err)
		return sess.Exec(ctx, cmd)
	}

	_, err = exec("crash 4")
	require.ErrorIs(t, err, cluster.ErrUnknownNode)
	_, err = exec("resume paused")
	require.ErrorIs(t, err, labcmd.ErrNoPausedNode)
	_, err = exec("partition 1|1")
	require.ErrorIs(t, err, cluster.ErrInvalidConfig)

	// A Command built by hand, not by Parse, may lack arguments: an
	// error, not a panic.
	_, err = sess.Exec(ctx, labcmd.Command{Name: "cut", Nodes: []labcmd.NodeRef{"1"}})
	require.ErrorIs(t, err, labcmd.ErrUsage)
	_, err = sess.Exec(ctx, labcmd.Command{Name: "frob"})
	require.ErrorIs(t, err, labcmd.ErrUnknownCommand)
	res, err := sess.Exec(ctx, labcmd.Command{})
	require.NoError(t, err)
	require.Nil(t, res)

	// A client operation that fails returns what the client knows with
	// the error; the text puts the error first.
	res, err = exec("put x 1 --via leader")
	require.NoError(t, err)
	require.IsType(t, labcmd.OpResult{}, res)
	l, _ := c.Leader()
	require.NoError(t, c.Crash(l))
	res, err = sess.Exec(ctx, labcmd.Command{Name: "put", Key: "x", Value: "2", Nodes: []labcmd.NodeRef{labcmd.NodeRef(l.String())}})
	require.ErrorIs(t, err, cluster.ErrNodeDown)
	require.IsType(t, labcmd.OpFailure{}, res)
	var b strings.Builder
	require.NoError(t, labcmd.Output{Cmd: "put", Result: res, Err: err}.WriteText(&b))
	require.Regexp(t, `^error: .*node down.* \(outcome fail after \d+ms\)\n$`, b.String())
	_, err = exec("wait leader")
	require.NoError(t, err)
	_, err = exec("pause leader 1h")
	require.NoError(t, err)
	_, err = exec("resume paused")
	require.NoError(t, err)

	// ctx ends a wait.
	wctx, wcancel := context.WithCancel(ctx)
	wcancel()
	_, err = sess.Exec(wctx, labcmd.Command{Name: "wait", Duration: time.Hour})
	require.True(t, errors.Is(err, context.Canceled), "%v", err)
}

func TestSessionLoadWrites(t *testing.T) {
	cfg := cluster.DefaultConfig()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := cluster.New(ctx, cfg)
	require.NoError(t, err)
	defer c.Close()
	sess, err := labcmd.NewSession(c)
	require.NoError(t, err)
	defer sess.Close()
	out := sess.Run(ctx, "load 500/s")
	require.NoError(t, out.Err)
	for sess.Load().OK < 20 {
		select {
		case <-ctx.Done():
			t.Fatalf("load wrote %d in a minute", sess.Load().OK)
		case <-time.After(10 * time.Millisecond):
		}
	}
	st := sess.Load()
	require.True(t, st.Running)
	require.Equal(t, 500, st.Rate)
	out = sess.Run(ctx, "load off")
	require.NoError(t, out.Err)
	off := out.Result.(labcmd.LoadResult)
	require.False(t, off.Running)
	require.GreaterOrEqual(t, off.OK, st.OK)
	require.GreaterOrEqual(t, len(c.History()), int(off.OK))
}
