package labweb

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/cluster"
	"github.com/coordkit/coordkit/cluster/labcmd"
)

// shellOn starts a one-node cluster and a shell on it that records what
// it prints; both close when the test ends.
func shellOn(t *testing.T) (*Shell, func() []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := cluster.New(ctx, cluster.DefaultConfig())
	require.NoError(t, err)
	t.Cleanup(c.Close)
	var mu sync.Mutex
	var printed []string
	rec := func(prefix string) func(labcmd.Output) {
		return func(o labcmd.Output) {
			mu.Lock()
			defer mu.Unlock()
			printed = append(printed, prefix+o.Cmd)
		}
	}
	sh, err := NewShell(c, ShellConfig{Print: rec(""), Echo: func(ev CommandEvent, o labcmd.Output) { rec("[web] ")(o) }})
	require.NoError(t, err)
	t.Cleanup(sh.Close)
	return sh, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), printed...)
	}
}

// A script prints one result per command, nothing for blank lines and
// comments, a parse error as the command's result, and stops at exit.
func TestShellScript(t *testing.T) {
	sh, printed := shellOn(t)
	require.NoError(t, sh.Script(t.Context(), strings.NewReader("\n# comment\nleader\nfrobnicate\nput x 1\nexit\nleader\n")))
	require.True(t, sh.Exited())
	require.Equal(t, []string{"leader", "frobnicate", "put"}, printed())
}

// Without exit the script runs to its end; a line over MaxLine is the
// reader's error; a cancelled context stops before the next line.
func TestShellScriptEnds(t *testing.T) {
	sh, printed := shellOn(t)
	require.NoError(t, sh.Script(t.Context(), strings.NewReader("leader\nstatus\n")))
	require.False(t, sh.Exited())
	require.Equal(t, []string{"leader", "status"}, printed())

	err := sh.Script(t.Context(), strings.NewReader("leader\n"+strings.Repeat("x", MaxLine+1)+"\n"))
	require.ErrorIs(t, err, bufio.ErrTooLong)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.NoError(t, sh.Script(ctx, strings.NewReader("leader\n")))
	require.Len(t, printed(), 3, "nothing runs after the context ends")
}

// Once serving, the shell's lines go through the page's Lab (the page
// sees them, tagged as the script's) and the page's own commands are
// echoed; Close stops the server.
func TestShellServe(t *testing.T) {
	sh, printed := shellOn(t)
	srv, err := sh.Serve(ServerConfig{Addr: "127.0.0.1:0"}, true)
	require.NoError(t, err)
	require.False(t, sh.Line(t.Context(), "leader"))
	code, _, _ := post(t, srv.URL(), "status")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, []string{"leader", "[web] status"}, printed())
	state, _, err := sh.web.Hub().State()
	require.NoError(t, err)
	require.Contains(t, string(state), `"source":"script"`)

	_, err = sh.Serve(ServerConfig{Addr: "0.0.0.0:0"}, false)
	require.ErrorIs(t, err, ErrTokenRequired)
}

func TestNewShellNilCluster(t *testing.T) {
	_, err := NewShell(nil, ShellConfig{})
	require.ErrorIs(t, err, ErrNilCluster)
}

// cancelOnWrite cancels a context when something is written to it.
type cancelOnWrite struct {
	mu     sync.Mutex
	text   strings.Builder
	cancel context.CancelFunc
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.text.Write(p)
	w.cancel()
	return len(p), nil
}

// Run reads the lines, then returns at once without a page or after exit;
// while a page is served it says so and serves until the context ends. A
// reader's error is wrapped.
func TestShellRun(t *testing.T) {
	sh, printed := shellOn(t)
	require.NoError(t, sh.Run(t.Context(), RunConfig{In: strings.NewReader("leader\n")}), "no page: returns at the end of input")
	require.Equal(t, []string{"leader"}, printed())
	err := sh.Run(t.Context(), RunConfig{In: strings.NewReader(strings.Repeat("x", MaxLine+1))})
	require.ErrorIs(t, err, bufio.ErrTooLong)
	require.ErrorContains(t, err, "lab: read commands: ")

	_, err = sh.Serve(ServerConfig{Addr: "127.0.0.1:0"}, true)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	errOut := &cancelOnWrite{cancel: cancel}
	require.NoError(t, sh.Run(ctx, RunConfig{In: strings.NewReader("status\n"), ErrOut: errOut}))
	require.Equal(t, "lab: commands done; serving the page until interrupted\n", errOut.text.String(), "served until the context ended")

	errOut = &cancelOnWrite{cancel: func() {}}
	require.NoError(t, sh.Run(t.Context(), RunConfig{In: strings.NewReader("exit\n"), ErrOut: errOut}), "exit returns though the page is up")
	require.Empty(t, errOut.text.String())
}
