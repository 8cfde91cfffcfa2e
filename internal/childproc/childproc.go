package childproc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
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
}

// Child is a running command.
type Child struct {
	cmd   *exec.Cmd
	grace time.Duration
	done  chan struct{}

	mu       sync.Mutex
	exitCode int
	waitErr  error
}

// Start starts the command in a new process group.
func Start(cfg Config) (*Child, error) {
	if cfg.Path == "" {
		return nil, ErrNoCommand
	}
	cmd := exec.Command(cfg.Path, cfg.Args...)
	cmd.Env = MergeEnv(os.Environ(), cfg.Env)
	cmd.Dir = cfg.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = cfg.Stdin, cfg.Stdout, cfg.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("childproc: start %s: %w", cfg.Path, err)
	}
	grace := cfg.KillGrace
	if grace <= 0 {
		grace = DefaultKillGrace
	}
	c := &Child{cmd: cmd, grace: grace, done: make(chan struct{})}
	go c.wait()
	return c, nil
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
	c.mu.Lock()
	c.exitCode, c.waitErr = code, err
	c.mu.Unlock()
	close(c.done)
}

// Pid returns the command's process id, which is also its process group id.
func (c *Child) Pid() int { return c.cmd.Process.Pid }

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

// Signal sends sig to the command's whole process group.
func (c *Child) Signal(sig syscall.Signal) error {
	err := syscall.Kill(-c.cmd.Process.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil // already gone
	}
	return err
}

// Stop sends SIGTERM to the group, SIGKILL after the grace period, and
// waits until the command has exited. It returns the exit status.
func (c *Child) Stop() int {
	select {
	case <-c.done:
		_ = c.Signal(syscall.SIGKILL) // stragglers left in the group
		return c.ExitCode()
	default:
	}
	_ = c.Signal(syscall.SIGTERM)
	timer := time.NewTimer(c.grace)
	defer timer.Stop()
	select {
	case <-c.done:
	case <-timer.C:
		_ = c.Signal(syscall.SIGKILL)
		<-c.done
	}
	_ = c.Signal(syscall.SIGKILL)
	return c.ExitCode()
}

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
