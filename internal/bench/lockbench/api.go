package lockbench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	coordkitpy "github.com/coordkit/coordkit/clients/python"
	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/internal/coordapi"
	"github.com/coordkit/coordkit/session"
)

// colAPI is the column of the coordination API measured from Python.
const colAPI = "api_python"

// AgainstAPI is the Options.Against value that adds the api_python column.
const AgainstAPI = "api"

// apiDriver is the Python program behind an api_python locker: it holds
// the lock named argv[3] through coordkit.py (in argv[1]) on the agent at
// argv[2], one "lock" or "unlock" line on stdin at a time, and answers each
// with "ok NS" or "err REASON" (after "ready", once it is loaded). NS is its
// CLOCK_MONOTONIC reading in nanoseconds when acquire() returned (lock) or
// just before it called release() (unlock): the handoff test's instants,
// taken where a Python program would see them. With a fourth argument it
// takes the lock, says "held TOKEN" and sleeps: the crash handoff's holder
// process.
const apiDriver = `import sys, time
sys.path.insert(0, sys.argv[1])
import coordkit
c, name = coordkit.Client(sys.argv[2]), sys.argv[3]
if len(sys.argv) > 4:
    h = c.lock(name).acquire()
    print("held", h.token, flush=True)
    time.sleep(1e9)
now = time.monotonic_ns  # CLOCK_MONOTONIC, the clock the Go side reads too
h = None
print("ready", flush=True)
for line in sys.stdin:
    try:
        if line.startswith("lock"):
            h = c.lock(name).acquire()
            t = now()
        else:
            t = now()
            h.release()
        print("ok", t, flush=True)
    except Exception as e:
        print("err", repr(e).replace("\n", " "), flush=True)
`

// apiImpl holds through the coordination API (internal/coordapi, served
// in this process on loopback over the run's etcd) from Python processes,
// one per locker: what a Python program using clients/python pays.
var apiImpl = impl{key: colAPI, label: "coordination API, Python client", api: true,
	new: func(ctx context.Context, e *env, name string, _ bool) (bench.Locker, error) {
		return e.pyLocker(ctx, name)
	}}

// apiServer is the run's agent, on its own etcd client, and the
// directory holding coordkit.py and the driver.
type apiServer struct {
	srv    *coordapi.Server
	dir    string
	python string
}

// startPython writes the Python files: coordkit.py and the drivers.
func (e *env) startPython(python string) error {
	dir, err := os.MkdirTemp("", "coordkit-bench-python-")
	if err != nil {
		return err
	}
	e.apiSrv = &apiServer{dir: dir, python: python}
	if err := coordkitpy.Install(dir); err != nil {
		return err
	}
	for file, text := range map[string]string{"driver.py": apiDriver, "pylocks.py": pyLocksDriver} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// startAPI serves the API on 127.0.0.1 and writes the Python files.
func (e *env) startAPI(ctx context.Context, python string) error {
	cli, err := e.client()
	if err != nil {
		return err
	}
	if e.apiSrv == nil {
		if err := e.startPython(python); err != nil {
			return err
		}
	}
	e.apiSrv.srv, err = coordapi.Listen(ctx, coordapi.Config{Client: cli, SessionOptions: []session.Option{session.WithTTL(10 * time.Second)}}, "127.0.0.1:0")
	return err
}

// close stops the agent (its holds released) and removes the files.
func (a *apiServer) close() {
	if a.srv != nil {
		_ = a.srv.Close()
	}
	_ = os.RemoveAll(a.dir)
}

// driver is the command line of an api_python process on name.
func (a *apiServer) driver(name string, extra ...string) (string, []string) {
	return a.python, append([]string{filepath.Join(a.dir, "driver.py"), a.dir, a.srv.URL, name}, extra...)
}

// pyLocker is one Python process holding through the API.
type pyLocker struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
	// locked and unlocking are the Python process's own CLOCK_MONOTONIC
	// readings: when its last acquire() returned and when it last called
	// release() (stamps).
	locked, unlocking int64
	// waits counts the "wait" lines of a driver whose waiting leaves no
	// trace on the server (redis-py's polling Lock): it says so itself.
	waits atomic.Int64
}

// stamps is when, by the Python process's clock, its last lock returned
// and its last unlock was called: the pipe's round trip is not in them.
func (l *pyLocker) stamps() (locked, unlocking int64) { return l.locked, l.unlocking }

func (e *env) pyLocker(ctx context.Context, name string) (*pyLocker, error) {
	prog, args := e.apiSrv.driver(name)
	return startPyLocker(ctx, prog, args)
}

// startPyLocker starts a driver process (the protocol of apiDriver) and
// waits for its "ready".
func startPyLocker(ctx context.Context, prog string, args []string) (*pyLocker, error) {
	cmd := exec.Command(prog, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	l := &pyLocker{cmd: cmd, in: in, lines: make(chan string, 1)}
	go func() {
		defer close(l.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			l.lines <- sc.Text()
		}
	}()
	// Python's start (hundreds of ms on a loaded machine) is no part of
	// what is measured.
	select {
	case line := <-l.lines:
		if line == "ready" {
			return l, nil
		}
		l.Close()
		return nil, fmt.Errorf("python driver: it said %q, not ready", line)
	case <-ctx.Done():
		l.Close()
		return nil, ctx.Err()
	}
}

// do sends one command and waits for its answer; when ctx ends first the
// process is killed (what it held is released when its connection closes).
func (l *pyLocker) do(ctx context.Context, what string) error {
	if _, err := io.WriteString(l.in, what+"\n"); err != nil {
		return fmt.Errorf("python driver %s: %w", what, err)
	}
	for {
		select {
		case line, ok := <-l.lines:
			if ok && line == "wait" {
				l.waits.Add(1)
				continue
			}
			return l.answer(what, line, ok)
		case <-ctx.Done():
			l.kill()
			return ctx.Err()
		}
	}
}

// answer takes in the answer line to what.
func (l *pyLocker) answer(what, line string, ok bool) error {
	switch {
	case !ok:
		return fmt.Errorf("python driver %s: the Python process exited", what)
	case !strings.HasPrefix(line, "ok "):
		return fmt.Errorf("python driver %s: %s", what, strings.TrimPrefix(line, "err "))
	}
	ns, err := strconv.ParseInt(strings.TrimPrefix(line, "ok "), 10, 64)
	if err != nil {
		return fmt.Errorf("python driver %s: answer %q: %w", what, line, err)
	}
	if what == "lock" {
		l.locked = ns
	} else {
		l.unlocking = ns
	}
	return nil
}

func (l *pyLocker) Lock(ctx context.Context) error   { return l.do(ctx, "lock") }
func (l *pyLocker) Unlock(ctx context.Context) error { return l.do(ctx, "unlock") }

func (l *pyLocker) kill() { _ = syscall.Kill(-l.cmd.Process.Pid, syscall.SIGKILL) }

func (l *pyLocker) Close() {
	_ = l.in.Close()
	l.kill()
	for range l.lines {
	}
	if err := l.cmd.Wait(); err != nil && !errors.As(err, new(*exec.ExitError)) {
		_ = err // a killed process: nothing to report
	}
}
