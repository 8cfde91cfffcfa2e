package agentcmd

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The parts of the API's answers that differ from run to run.
var (
	leaseRe = regexp.MustCompile(`("lease":"|/)[0-9a-f]{8,16}"`)
	timeRe  = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	numRe   = regexp.MustCompile(`"(token|revision|holder_token)":\d+`)
	leftRe  = regexp.MustCompile(`"lease_remaining_s":[0-9.e+-]+`)
)

// normalize blanks lease IDs, times, tokens, revisions and the time left, and keeps one of
// a run of equal lines (the "held" lines, one a second).
func normalize(out string) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		l = leaseRe.ReplaceAllString(l, `${1}LEASE"`)
		l = timeRe.ReplaceAllString(l, "TIME")
		l = numRe.ReplaceAllString(l, `"$1":N`)
		l = leftRe.ReplaceAllString(l, `"lease_remaining_s":N`)
		if len(lines) > 0 && lines[len(lines)-1] == l {
			continue
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n")
}

// docSession is the checked curl session of docs/api.md: its commands and,
// for each, the output shown.
func docSession(t *testing.T) (cmds []string, outs []string) {
	t.Helper()
	b, err := os.ReadFile("../../../docs/api.md")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(b), "<!-- checked curl session -->\n```console\n")
	require.True(t, ok, "docs/api.md has no checked curl session")
	block, _, ok := strings.Cut(rest, "```")
	require.True(t, ok)
	for _, l := range strings.Split(strings.TrimRight(block, "\n"), "\n") {
		if c, ok := strings.CutPrefix(l, "$ "); ok {
			cmds, outs = append(cmds, c), append(outs, "")
			continue
		}
		require.NotEmpty(t, cmds, "output before the first command: %s", l)
		outs[len(outs)-1] += l + "\n"
	}
	return cmds, outs
}

// TestDocCurlSession runs docs/api.md's curl session against a fresh agent
// and compares what curl prints with the page.
func TestDocCurlSession(t *testing.T) {
	curl := interpreter(t, "curl", "curl")
	url, _ := startAgent(t)
	host := strings.TrimPrefix(url, "http://")
	cmds, outs := docSession(t)
	require.NotEmpty(t, cmds)
	for i, c := range cmds {
		require.True(t, strings.HasPrefix(c, "curl "), c)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, "sh", "-c", curl+strings.TrimPrefix(strings.ReplaceAll(c, "localhost:4050", host), "curl"))
		out, _ := cmd.Output() // --max-time ends the holds with curl's exit 28
		cancel()
		require.Equal(t, normalize(outs[i]), normalize(string(out)), "docs/api.md: $ %s", c)
	}
}

func TestNormalize(t *testing.T) {
	got := normalize(`{"event":"acquired","token":12,"key":"a/694d8a2b5c1e0f04","lease":"694d8a2b5c1e0f04","lease_deadline":"2026-12-05T18:40:35.490632244Z"}
{"event":"held","token":12,"lease_deadline":"2026-12-05T18:40:37Z"}
{"event":"held","token":12,"lease_deadline":"2026-12-05T18:40:38.1Z"}
`)
	require.Equal(t, `{"event":"acquired","token":N,"key":"a/LEASE","lease":"LEASE","lease_deadline":"TIME"}
{"event":"held","token":N,"lease_deadline":"TIME"}`, got)
}
