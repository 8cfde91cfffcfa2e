package childproc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNoCommand is returned by Start when Config.Path is empty.
var ErrNoCommand = errors.New("childproc: no command")

// DefaultKillGrace is the time between SIGTERM and SIGKILL when KillGrace is zero.
const DefaultKillGrace = 5 * time.Second

// Config describes the command to run.
type Config struct {
	// Path is the command; looked up in PATH when it has no slash.
	Path string
	Args []string
	// Env is set over the inherited environment: a variable named here
	// replaces an inherited one of the same name.
	Env map[string]string
	// Dir is the working directory; the current one when empty.
	Dir    string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// KillGrace is how long Stop waits after SIGTERM before SIGKILL.
	KillGrace time.Duration
	// Watchdog, when set (on Linux), is the path of a coordctl binary run
	// as the command's parent in watchdog mode (watchdog.go): it stops the
	// command and every descendant when Deadline's instants pass without
	// the supervisor moving them, or when the supervisor dies. Empty: the
	// command is this process's child, as coordctl's in-process tests run it.
	Watchdog string
	// Deadline returns the instants by which the command must be stopping
	// (term) and dead (kill); the watchdog holds them and is told each
	// later pair. Nil: no deadline, the watchdog acts only when the
	// supervisor dies.
	Deadline func() (term, kill time.Time)
}

func (c Config) deadlines() (term, kill time.Time) {
	if c.Deadline == nil {
		return time.Time{}, time.Time{}
	}
	return c.Deadline()
}

// Child is a running command.
type Child struct {
	cmd      *exec.Cmd     // nil under a watchdog
	watchdog *watchdogLink // nil without one
	pid      int           // the command's pid, also its process group's id
	grace    time.Duration
	done     chan struct{}

	exitOnce sync.Once
	mu       sync.Mutex
	exitCode int
	waitErr  error
}

// Start starts the command in a new process group. Where the platform has
// it (Linux), the command gets SIGKILL when the thread that started it ends
// (Pdeathsig): Start pins that thread to a goroutine that lives until the
// command has exited, so the signal comes only when the whole process ends,
// for example with kill -9.
//
// With cfg.Watchdog set (on Linux) the command's parent is the watchdog
// instead (watchdog.go), and Stop returns only once the watchdog has
// reported every descendant dead.
func Start(cfg Config) (*Child, error) {
	if cfg.Path == "" {
		return nil, ErrNoCommand
	}
	grace := cfg.KillGrace
	if grace <= 0 {
		grace = DefaultKillGrace
	}
	if cfg.Watchdog != "" && watchdogSupported {
		c, err := startWatched(cfg, grace)
		if err != nil {
			return nil, fmt.Errorf("childproc: start %s: %w", cfg.Path, err)
		}
		return c, nil
	}
	cmd := exec.Command(cfg.Path, cfg.Args...)
	cmd.Env = MergeEnv(os.Environ(), cfg.Env)
	cmd.Dir = cfg.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = cfg.Stdin, cfg.Stdout, cfg.Stderr
	cmd.SysProcAttr = sysProcAttr()
	c := &Child{cmd: cmd, grace: grace, done: make(chan struct{})}
	started := make(chan error, 1)
	go c.run(started)
	if err := <-started; err != nil {
		return nil, fmt.Errorf("childproc: start %s: %w", cfg.Path, err)
	}
	return c, nil
}

// run starts the command and waits for it on one locked OS thread: the
// parent-death signal is tied to the thread that forked, and a locked
// goroutine's thread is not reused or ended before the goroutine unlocks.
func (c *Child) run(started chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := c.cmd.Start(); err != nil {
		started <- err
		return
	}
	c.pid = c.cmd.Process.Pid
	started <- nil
	c.wait()
}

func (c *Child) wait() {
	err := c.cmd.Wait()
	code := 0
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		code = exitErr.ExitCode()
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal()) // the shell's convention
		}
		err = nil
	default:
		code = 1
	}
	c.exit(code, err)
}

// Pid returns the command's process id, which is also its process group id.
func (c *Child) Pid() int { return c.pid }

// Done is closed when the command has exited.
func (c *Child) Done() <-chan struct{} { return c.done }

// ExitCode returns the command's exit status once Done is closed: its exit
// code, or 128+N when signal N ended it.
func (c *Child) ExitCode() int {
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exitCode
}

// Signal sends sig to the command's whole process group (also after the
// leader exited, while processes it started remain in the group).
func (c *Child) Signal(sig syscall.Signal) error {
	err := syscall.Kill(-c.pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil // already gone
	}
	return err
}

// GroupAlive reports whether a process of the command's group other than a
// zombie is still running: the leader, or anything it started that stayed in
// the group.
func (c *Child) GroupAlive() bool {
	select {
	case <-c.done:
	default:
		return true
	}
	return groupAlive(c.pid)
}

// pollEvery is how often Stop looks whether the group is empty: there is no
// event for the end of processes that are not our children.
const pollEvery = 20 * time.Millisecond

// Stop ends the command's whole process group and returns the leader's exit
// status. If anything of the group is alive — the leader, or processes it
// left behind when it exited — Stop sends SIGTERM (and SIGCONT, so a stopped
// process sees it) to the group, SIGKILL after the grace period, and returns
// only when the leader has exited and no live process is left in the group.
// Call it after Done too: a leader that exits early may leave its background
// jobs behind. Stop may wait for ever on a process that SIGKILL cannot end
// (uninterruptible sleep); it is not safe to call from two goroutines.
func (c *Child) Stop() int { return c.StopBy(nil) }

// StopBy is Stop with a second deadline: SIGKILL comes at the end of the
// grace period or as soon as kill is closed, whichever is first (a closed
// kill makes SIGKILL follow SIGTERM at once). A nil kill is never closed.
func (c *Child) StopBy(kill <-chan struct{}) int {
	defer c.reap()
	if !c.GroupAlive() {
		return c.ExitCode()
	}
	_ = c.Signal(syscall.SIGTERM)
	_ = c.Signal(syscall.SIGCONT)
	grace := time.NewTimer(c.grace)
	defer grace.Stop()
	if !c.waitGroup(grace.C, kill) {
		_ = c.Signal(syscall.SIGKILL)
		c.waitGroup(nil, nil)
	}
	return c.ExitCode()
}

// waitGroup waits until the leader has exited and the group is empty (true)
// or until timeout fires or kill is closed (false); nil channels never fire.
func (c *Child) waitGroup(timeout <-chan time.Time, kill <-chan struct{}) bool {
	select {
	case <-c.done:
	case <-timeout:
		return false
	case <-kill:
		return false
	}
	ticker := time.NewTicker(pollEvery)
	defer ticker.Stop()
	for groupAlive(c.pid) {
		select {
		case <-ticker.C:
		case <-timeout:
			return false
		case <-kill:
			return false
		}
	}
	return true
}

// KillGrace returns the time between SIGTERM and SIGKILL of Stop.
func (c *Child) KillGrace() time.Duration { return c.grace }

// MergeEnv returns base with every variable of overrides set, replacing
// inherited values of the same name. The result is sorted by name for
// the variables it sets.
func MergeEnv(base []string, overrides map[string]string) []string {
	out := make([]string, 0, len(base)+len(overrides))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if _, replaced := overrides[name]; !replaced {
			out = append(out, kv)
		}
	}
	names := make([]string, 0, len(overrides))
	for k := range overrides {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		out = append(out, k+"="+overrides[k])
	}
	return out
}
