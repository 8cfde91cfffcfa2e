package labweb

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// chromiumPath is Debian's chromium, which .ci/run installs.
const chromiumPath = "/usr/bin/chromium"

// browser starts a fresh headless Chromium; under CI=true a missing one
// fails the test, elsewhere it skips.
func browser(t *testing.T) (context.Context, context.CancelFunc) {
	t.Helper()
	if _, err := exec.LookPath(chromiumPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not found: install the Debian package chromium", chromiumPath)
		}
		t.Skipf("%s not found: install the Debian package chromium (apt-get install chromium)", chromiumPath)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-proxy-server", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1300, 1000),
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	return ctx, func() { cancel(); acancel() }
}

// evalInt evaluates a JavaScript expression that gives a number.
func evalInt(ctx context.Context, t *testing.T, expr string) int {
	t.Helper()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[float64](expr))
	require.NoError(t, err, expr)
	return int(n)
}

// waitFor polls a JavaScript condition until it holds (or ctx ends: the
// test's hang guard is the only bound, not chromedp's default 30 s polling
// timeout, which a loaded machine exceeded while the page caught up).
func waitFor(ctx context.Context, t *testing.T, cond string) {
	t.Helper()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(0)))
	require.NoError(t, err, "waiting for %s", cond)
}

func do(ctx context.Context, t *testing.T, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, steps...))
}

const (
	leaderJS = `+document.querySelector('#leader').dataset.leader`
	termJS   = `+document.querySelector('#leader').dataset.term`
	tputJS   = `+document.querySelector('#load-tput').dataset.value`
)

// clickNode opens a node's menu and clicks one of its items.
func clickNode(ctx context.Context, t *testing.T, id int, item string) {
	t.Helper()
	do(ctx, t,
		chromedp.Click(chromedp.CSS(fmt.Sprintf("#node-%d circle", id))),
		chromedp.WaitVisible(chromedp.CSS("#menu-"+item)),
		chromedp.Click(chromedp.CSS("#menu-"+item)),
	)
}

// The page in a real browser: a leader is shown; crashing it from the
// page gives a new leader in a higher term; partitioning the leader into
// a minority (no side has a quorum) stops the write load, and heal
// restarts it.
func TestBrowserCrashPartitionHeal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	_, srv := startLab(t, 5, Options{}, ServerConfig{})
	ctx, cancel := browser(t)
	defer cancel()
	ctx, stop := context.WithTimeout(ctx, 3*time.Minute) // a hang guard, not a performance bound
	defer stop()

	do(ctx, t, chromedp.Navigate(srv.URL()))
	waitFor(ctx, t, leaderJS+` > 0`)
	leader, term := evalInt(ctx, t, leaderJS), evalInt(ctx, t, termJS)
	t.Logf("page shows leader %d in term %d", leader, term)

	clickNode(ctx, t, leader, "crash")
	waitFor(ctx, t, fmt.Sprintf(`%s > 0 && %s !== %d && %s > %d`, leaderJS, leaderJS, leader, termJS, term))
	newLeader, newTerm := evalInt(ctx, t, leaderJS), evalInt(ctx, t, termJS)
	t.Logf("after crash: leader %d in term %d", newLeader, newTerm)
	require.Greater(t, newTerm, term)

	clickNode(ctx, t, leader, "restart")
	waitFor(ctx, t, `document.querySelectorAll('#ring [data-state=down]').length === 0`)
	do(ctx, t,
		chromedp.SetValue(chromedp.CSS("#load-rate"), "200"),
		chromedp.Click(chromedp.CSS("#load-toggle")),
	)
	waitFor(ctx, t, tputJS+` > 0`)
	shot := os.Getenv("LAB_SCREENSHOT")
	if shot != "" {
		// Give the lanes some history to show.
		do(ctx, t, chromedp.Sleep(4*time.Second))
	}

	// The leader and one other on one side, two and one on the others.
	l := evalInt(ctx, t, leaderJS)
	var others []string
	for i := 1; i <= 5; i++ {
		if i != l {
			others = append(others, strconv.Itoa(i))
		}
	}
	sort.Strings(others)
	spec := fmt.Sprintf("%d,%s|%s|%s", l, others[0], strings.Join(others[1:3], ","), others[3])
	do(ctx, t,
		chromedp.SetValue(chromedp.CSS("#partition-input"), spec),
		chromedp.Click(chromedp.CSS("#partition-btn")),
	)
	waitFor(ctx, t, `document.querySelectorAll('#ring .link[data-cut="abba"]').length > 0`)
	waitFor(ctx, t, tputJS+` === 0`)
	t.Logf("partition %s: write load throughput 0", spec)
	if shot != "" {
		// Let a few samples of the stalled load reach the lanes.
		do(ctx, t, chromedp.Sleep(3*time.Second))
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(shot, png, 0o644))
		t.Logf("wrote %s", shot)
	}
	do(ctx, t, chromedp.Click(chromedp.CSS("#heal-btn")))
	waitFor(ctx, t, tputJS+` > 0`)
	do(ctx, t, chromedp.Click(chromedp.CSS("#load-toggle")))
	waitFor(ctx, t, `document.querySelector('#load-toggle').dataset.on === 'false'`)
}
