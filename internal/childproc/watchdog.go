package childproc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The watchdog is the command's parent when Config.Watchdog names a
// coordctl binary: coordctl re-executed as `coordctl __watchdog`, a small
// process that does not depend on the supervisor (the coordctl that holds
// the lease) to stop the command in time.
//
//	coordctl lock NAME -- CMD          the supervisor: keeps the lease alive,
//	└─ coordctl __watchdog -- CMD      forwards signals, stops, releases last
//	   └─ CMD (its own process group)  and everything CMD starts, in any group
//
// The supervisor tells the watchdog, on a pipe, the instants at which the
// command must be stopping (the lease's local deadline: SIGTERM) and dead
// (half the margin before the lease's earliest possible expiry on the
// server: SIGKILL), and moves them only forward, only after etcd
// acknowledged a keepalive (it sends what Session.Deadline says). If the
// supervisor is frozen, starved or stuck, nothing moves them, and the
// watchdog stops the command itself; if the supervisor dies, the pipe
// closes and the watchdog stops the command at once (SIGTERM, then SIGKILL
// after the grace or at the deadline, whichever is first). The watchdog is
// a child subreaper (PR_SET_CHILD_SUBREAPER): every process the command
// starts stays its descendant, whatever its process group or session
// (setsid, a shell's job control), even after its parent exits, so
// "stop" means every descendant, not only the command's process group. A
// cgroup is not used: creating one needs a delegated cgroup v2 subtree,
// which a plain user's shell or a container seldom has.
//
// Release happens only after the watchdog reports the tree dead ("reap").
//
// What remains: a SIGSTOP of the supervisor and the watchdog together
// (kill -STOP of coordctl's process group, which the watchdog shares so
// that a terminal's Ctrl-Z or Ctrl-C reaches coordctl as before), a freeze
// of the whole machine, and a SIGKILL of the watchdog itself (its direct
// child gets SIGKILL from the kernel, Pdeathsig; grandchildren survive).

// WatchdogArg is the first argument that makes coordctl a watchdog.
const WatchdogArg = "__watchdog"

// selfExe is the running binary on Linux: executed, it runs this very
// build, even after the file at its path was replaced or removed.
const selfExe = "/proc/self/exe"

// Self is the watchdog a coordctl binary names for the commands it runs
// (Config.Watchdog): itself, not the file at its path. A supervisor runs
// for weeks (the sidecar starts its command anew at every leadership), and
// meanwhile an upgrade may put another version at that path, whose
// watchdog mode may take other arguments, or remove it: the command would
// then not start. Where /proc/self/exe is not there, the path
// (os.Executable), or "" when even that is unknown.
func Self() string {
	if _, err := os.Stat(selfExe); err == nil {
		return selfExe
	}
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return exe
}

// The watchdog's pipes, after stdin, stdout and stderr.
const (
	watchdogControlFD = 3 // supervisor → watchdog
	watchdogReportFD  = 4 // watchdog → supervisor
)

// extendEvery is how often the supervisor looks whether the deadline moved
// (a keepalive was acknowledged) and tells the watchdog.
const extendEvery = 25 * time.Millisecond

// watchdogLink is the supervisor's side of a watchdog.
type watchdogLink struct {
	proc    *exec.Cmd
	control *os.File
	mu      sync.Mutex // serializes writes to control
	exited  chan struct{}
	fired   chan string // what the watchdog did on its own ("term", "kill", ...)
}

// startWatched starts cfg.Watchdog in watchdog mode with the command, and
// returns once the watchdog has started the command (its pid) or failed to.
func startWatched(cfg Config, grace time.Duration) (*Child, error) {
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		return nil, err
	}
	term, kill := cfg.deadlines()
	args := []string{WatchdogArg, "--grace", grace.String(),
		"--term-at", strconv.FormatInt(monoOf(term), 10), "--kill-at", strconv.FormatInt(monoOf(kill), 10), "--", cfg.Path}
	cmd := exec.Command(cfg.Watchdog, append(args, cfg.Args...)...)
	if cfg.Watchdog == selfExe {
		cmd.Args[0] = os.Args[0] // ps shows the supervisor's name, not /proc/self/exe
	}
	cmd.Env = MergeEnv(os.Environ(), cfg.Env)
	cmd.Dir = cfg.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = cfg.Stdin, cfg.Stdout, cfg.Stderr
	cmd.ExtraFiles = []*os.File{ctlR, repW}
	err = cmd.Start()
	ctlR.Close()
	repW.Close()
	if err != nil {
		ctlW.Close()
		repR.Close()
		return nil, err
	}
	link := &watchdogLink{proc: cmd, control: ctlW, exited: make(chan struct{}), fired: make(chan string, 8)}
	c := &Child{grace: grace, done: make(chan struct{}), watchdog: link}
	started := make(chan error, 1)
	go c.readReports(bufio.NewScanner(repR), started)
	// Extensions flow from now on, not from the pid: a watchdog slow to
	// start (a large binary on a starved machine) finds the deadlines that
	// moved meanwhile waiting on its pipe, instead of acting on the ones
	// it was started with.
	if cfg.Deadline != nil {
		go c.extend(cfg.deadlines)
	}
	if err := <-started; err != nil {
		<-link.exited
		_ = link.control.Close()
		return nil, err
	}
	return c, nil
}

// readReports reads the watchdog's lines until it exits: the command's pid
// (then started gets nil), the command's exit status (Done), what the
// watchdog did on its own.
func (c *Child) readReports(sc *bufio.Scanner, started chan<- error) {
	link := c.watchdog
	defer func() {
		_ = link.proc.Wait()
		code := 1
		if ps := link.proc.ProcessState; ps != nil {
			code = ps.ExitCode()
		}
		c.exit(code, nil) // the watchdog died without reporting the exit
		close(link.exited)
	}()
	for sc.Scan() {
		verb, arg, _ := strings.Cut(sc.Text(), " ")
		switch verb {
		case "pid":
			pid, err := strconv.Atoi(arg)
			if err != nil {
				started <- fmt.Errorf("watchdog: bad pid %q", arg)
				return
			}
			c.pid = pid
			started <- nil
		case "starterr":
			kind, msg, _ := strings.Cut(arg, " ")
			started <- &startError{msg: msg, notFound: kind == "notfound"}
			return
		case "exit":
			code, _ := strconv.Atoi(arg)
			c.exit(code, nil)
		case "fired":
			select {
			case link.fired <- arg:
			default:
			}
		}
	}
	if c.pid == 0 {
		started <- errors.New("watchdog: exited before starting the command")
	}
}

// startError is why the watchdog could not start the command, as it
// reported it; a command not found matches os.ErrNotExist (exit 127, as a
// shell says), one found and not executable does not (126).
type startError struct {
	msg      string
	notFound bool
}

func (e *startError) Error() string        { return e.msg }
func (e *startError) Is(target error) bool { return e.notFound && target == os.ErrNotExist }

// exit records the command's status once.
func (c *Child) exit(code int, err error) {
	c.exitOnce.Do(func() {
		c.mu.Lock()
		c.exitCode, c.waitErr = code, err
		c.mu.Unlock()
		close(c.done)
	})
}

// extend tells the watchdog every new deadline until it exits: the
// supervisor's proof of life. A frozen supervisor sends nothing.
func (c *Child) extend(deadlines func() (term, kill time.Time)) {
	t := time.NewTicker(extendEvery)
	defer t.Stop()
	var last int64
	for {
		term, kill := deadlines()
		// The clock is read before the time left, so that a pause in
		// between makes the instant sent earlier, never later.
		if k := monoOf(kill); k > last {
			last = k
			c.watchdog.send(fmt.Sprintf("extend %d %d", monoOf(term), k))
		}
		select {
		case <-c.watchdog.exited:
			return
		case <-t.C:
		}
	}
}

func (l *watchdogLink) send(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.control.WriteString(line + "\n")
}

// reap asks the watchdog to SIGKILL whatever is left of the command's tree
// and waits until it has exited, which it does once no descendant is alive.
func (c *Child) reap() {
	if c.watchdog == nil {
		return
	}
	c.watchdog.send("reap")
	<-c.watchdog.exited
	_ = c.watchdog.control.Close()
}

// Fired returns a channel that receives what the watchdog did on its own
// ("term": SIGTERM at the local deadline, "kill": SIGKILL before the
// earliest expiry, "orphaned": the supervisor's pipe closed); nil without a
// watchdog.
func (c *Child) Fired() <-chan string {
	if c.watchdog == nil {
		return nil
	}
	return c.watchdog.fired
}

// monoOf is t on CLOCK_MONOTONIC in nanoseconds, the clock the supervisor
// and the watchdog share; 0 for the zero time (no deadline). The clock is
// read first, then the time left: a pause between the two makes the result
// earlier, never later.
func monoOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	now := monoNow()
	return now + int64(time.Until(t))
}
