package labcmd_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/cluster"
	"github.com/coordkit/coordkit/cluster/labcmd"
)

var update = flag.Bool("update", false, "rewrite testdata/*.txt with the output of this run")

// A golden script (etcd-io/raft's datadriven layout) is a list of blocks
// separated by blank lines. A block is one command line, a line "----",
// then the expected output: the shell's text, then the JSON object it
// prints with -w json. Lines starting with "#" before a block are
// comments, kept by -update. The file's first line, "# lab --nodes N",
// says how many nodes to start. "$TMP" in a command stands for a temporary
// directory.
//
// Only deterministic output belongs here: latencies and elapsed times are
// normalised to <ms> and <d>; which node wins an election is not seeded, so
// scripts on more than one node avoid commands that print the leader.
type block struct {
	comments []string
	line     string
	want     string
}

func readScript(t *testing.T, path string) (nodes int, blocks []block) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	header := regexp.MustCompile(`^# lab --nodes (\d+)$`).FindStringSubmatch(lines[0])
	require.NotNil(t, header, "%s: first line must be \"# lab --nodes N\"", path)
	nodes, _ = strconv.Atoi(header[1])
	var cur block
	for i := 1; i < len(lines); i++ {
		l := lines[i]
		switch {
		case l == "":
			continue
		case strings.HasPrefix(l, "#"):
			cur.comments = append(cur.comments, l)
			continue
		}
		cur.line = l
		i++
		require.Less(t, i, len(lines), "%s: %q has no ----", path, l)
		require.Equal(t, "----", lines[i], "%s:%d", path, i+1)
		var want []string
		for i+1 < len(lines) && lines[i+1] != "" {
			i++
			want = append(want, lines[i])
		}
		cur.want = strings.Join(want, "\n")
		blocks = append(blocks, cur)
		cur = block{}
	}
	return nodes, blocks
}

func writeScript(t *testing.T, path string, nodes int, blocks []block) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "# lab --nodes %d\n", nodes)
	for _, bl := range blocks {
		b.WriteString("\n")
		for _, c := range bl.comments {
			b.WriteString(c + "\n")
		}
		fmt.Fprintf(&b, "%s\n----\n%s\n", bl.line, bl.want)
	}
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
}

var normalisers = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`, \d+\.\d\dms\)`), ", <ms>)"},
	{regexp.MustCompile(`after [0-9.]+(ns|µs|ms|s)\b`), "after <d>"},
	{regexp.MustCompile(`"latency_ms":[0-9.e+-]+`), `"latency_ms":"<ms>"`},
	{regexp.MustCompile(`\d+ ok, \d+ fail, \d+ unknown`), "<n> ok, <n> fail, <n> unknown"},
	{regexp.MustCompile(`"writes_(ok|fail|unknown)":\d+`), `"writes_$1":"<n>"`},
}

func normalise(s, tmp string) string {
	for _, n := range normalisers {
		s = n.re.ReplaceAllString(s, n.repl)
	}
	return strings.ReplaceAll(s, tmp, "$TMP")
}

// settle waits, when every node is up and running, until each has applied
// what the most advanced one committed. In hashicorp/raft the raft
// goroutine hands committed entries to the FSM goroutine and only then
// records them as applied (raft.go, processLogs: applyBatch, then
// setLastApplied), while the FSM goroutine answers an Apply's future once
// it has applied the entry: the two race, so a status read right after a
// write returned could show applied one behind commit (it did, with four
// CPU hogs beside make test) — true at that instant, but not the script's
// deterministic output.
func settle(ctx context.Context, t *testing.T, c *cluster.Cluster) {
	t.Helper()
	var commit uint64
	for _, n := range c.Status().Nodes {
		if !n.Up || n.Paused {
			return
		}
		commit = max(commit, n.Commit)
	}
	require.NoError(t, c.WaitApplied(ctx, commit))
}

// run executes one line as the shell does and returns its text and JSON.
func run(ctx context.Context, t *testing.T, sess *labcmd.Session, line string) string {
	t.Helper()
	out := sess.Run(ctx, line)
	var b bytes.Buffer
	require.NoError(t, out.WriteText(&b))
	js, err := json.Marshal(out)
	require.NoError(t, err)
	b.Write(js)
	return b.String()
}

func TestLabGoldenScripts(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			nodes, blocks := readScript(t, path)
			cfg := cluster.DefaultConfig()
			cfg.Nodes = nodes
			cfg.Seed = 1
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c, err := cluster.New(ctx, cfg)
			require.NoError(t, err)
			defer c.Close()
			sess, err := labcmd.NewSession(c)
			require.NoError(t, err)
			tmp := t.TempDir()
			for i, bl := range blocks {
				if bl.line == "status" {
					settle(ctx, t, c)
				}
				got := normalise(run(ctx, t, sess, strings.ReplaceAll(bl.line, "$TMP", tmp)), tmp)
				if *update {
					blocks[i].want = got
					continue
				}
				require.Equal(t, bl.want, got, "%s: %s", path, bl.line)
			}
			if *update {
				writeScript(t, path, nodes, blocks)
			}
		})
	}
}

// The scripts themselves stay readable: every block's output has at least
// the JSON line, so a block cannot silently lose its expectation.
func TestLabGoldenScriptsWellFormed(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	require.NoError(t, err)
	for _, path := range files {
		_, blocks := readScript(t, path)
		for _, bl := range blocks {
			sc := bufio.NewScanner(strings.NewReader(bl.want))
			last := ""
			for sc.Scan() {
				last = sc.Text()
			}
			require.True(t, json.Valid([]byte(last)), "%s: %q: last line is not JSON", path, bl.line)
		}
	}
}
