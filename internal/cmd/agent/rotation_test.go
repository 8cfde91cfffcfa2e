package agentcmd

import (
	"bufio"
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/httpguard/guardtest"
)

// askOnEachLine: for each line on stdin, one read of the agent (a lock's
// status, which needs the token), then "ok" or "error CODE".
const askOnEachLinePy = `
import sys
sys.path.insert(0, sys.argv[1])
import coordkit
url, how, arg = sys.argv[2:5]
c = coordkit.Client(url, token_file=arg) if how == "file" else coordkit.Client(url, token=arg)
for _ in sys.stdin:
    try:
        c.lock_status("jobs/rotated")
        print("ok", flush=True)
    except coordkit.CoordError as e:
        print("error", e.code, flush=True)
`

const askOnEachLineJS = `
const [lib, url, how, arg] = process.argv.slice(1);
const { Client } = require(lib);
const c = new Client(url, how === 'file' ? { tokenFile: arg } : { token: arg });
const rl = require('node:readline').createInterface({ input: process.stdin });
rl.on('line', async () => {
  try {
    await c.lockStatus('jobs/rotated');
    console.log('ok');
  } catch (e) {
    console.log('error', e.code);
  }
});
`

// asker is a client script started with askOnEachLine.
type asker struct {
	in  io.WriteCloser
	out *bufio.Scanner
}

func (a asker) ask(t *testing.T) string {
	t.Helper()
	_, err := io.WriteString(a.in, "go\n")
	require.NoError(t, err)
	require.True(t, a.out.Scan(), "the client script ended")
	return a.out.Text()
}

// Both clients given token_file / tokenFile follow a rotation of the
// Secret as the agent does; a client given the token itself is refused
// once the agent no longer accepts it (two rotations later: the agent
// accepts only the previous token besides the new one).
func TestClientsFollowARotatedTokenFile(t *testing.T) {
	t.Parallel()
	vol := guardtest.NewSecretVolume(t, "first-token-0123456789")
	url, _ := startCoordctl(t, "agent", "--api-token-file", vol.Path())
	pyDir, err := filepath.Abs("../../../clients/python")
	require.NoError(t, err)
	nodeLib, err := filepath.Abs("../../../clients/node/coordkit.js")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := func(argv ...string) asker {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		in, err := cmd.StdinPipe()
		require.NoError(t, err)
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		cmd.Stderr = &testWriter{t}
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = in.Close(); _ = cmd.Wait() })
		return asker{in: in, out: bufio.NewScanner(out)}
	}
	py := interpreter(t, "python3", "python3")
	node := interpreter(t, "node", "nodejs")
	followers := map[string]asker{
		"python token_file": start(py, "-c", askOnEachLinePy, pyDir, url, "file", vol.Path()),
		"node tokenFile":    start(node, "-e", askOnEachLineJS, nodeLib, url, "file", vol.Path()),
	}
	fixed := map[string]asker{
		"python token": start(py, "-c", askOnEachLinePy, pyDir, url, "token", "first-token-0123456789"),
		"node token":   start(node, "-e", askOnEachLineJS, nodeLib, url, "token", "first-token-0123456789"),
	}
	for name, a := range map[string]asker{"python token_file": followers["python token_file"], "node tokenFile": followers["node tokenFile"],
		"python token": fixed["python token"], "node token": fixed["node token"]} {
		require.Equal(t, "ok", a.ask(t), name)
	}
	// The agent reads the file when a request comes: a request after each
	// rotation, so that it has seen both.
	for _, tok := range []string{"second-token-0123456789", "third-token-0123456789"} {
		vol.Rotate(t, tok)
		for name, a := range followers {
			require.Equal(t, "ok", a.ask(t), name)
		}
	}
	for name, a := range fixed {
		require.Equal(t, "error unauthorized", a.ask(t), name+": two rotations later the first token is refused")
	}
}

// testWriter sends a script's stderr to the test's log.
type testWriter struct{ t *testing.T }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", p)
	return len(p), nil
}
