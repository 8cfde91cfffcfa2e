package childproc

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const watchdogSupported = true

func monoNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// untilMono is how long until mono (CLOCK_MONOTONIC ns); 0 means never.
func untilMono(mono int64) (time.Duration, bool) {
	if mono == 0 {
		return 0, false
	}
	return time.Duration(mono - monoNow()), true
}

// WatchdogMain is `coordctl __watchdog --grace D --term-at N --kill-at N --
// CMD ARGS...`: it starts CMD in a process group of its own, reports its
// pid and exit status on fd 4, takes deadlines and "reap" on fd 3, and
// stops CMD and every descendant when a deadline passes or fd 3 closes. It
// returns the watchdog's exit code (0 once the tree is dead).
func WatchdogMain(args []string) int {
	report := os.NewFile(watchdogReportFD, "report")
	if report == nil || unix.SetNonblock(watchdogControlFD, true) != nil {
		fmt.Fprintln(os.Stderr, "coordctl: __watchdog is started by coordctl itself")
		return 2
	}
	syscall.CloseOnExec(watchdogControlFD)
	syscall.CloseOnExec(watchdogReportFD)
	// Started as /proc/self/exe (Self), the kernel names this process
	// "exe": ps -C, top and killall know it by its binary's name.
	_ = os.WriteFile("/proc/self/comm", []byte(filepath.Base(os.Args[0])), 0)
	control := &controlPipe{fd: watchdogControlFD}
	w := &watchdog{report: report, self: os.Getpid()}
	fs := flag.NewFlagSet(WatchdogArg, flag.ContinueOnError)
	fs.DurationVar(&w.grace, "grace", DefaultKillGrace, "")
	fs.Int64Var(&w.termAt, "term-at", 0, "")
	fs.Int64Var(&w.killAt, "kill-at", 0, "")
	if err := fs.Parse(args); err != nil || fs.NArg() == 0 {
		w.say("starterr watchdog: bad arguments")
		return 2
	}
	// Orphans anywhere below become this process's children.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		w.say("starterr watchdog: PR_SET_CHILD_SUBREAPER: " + err.Error())
		return 1
	}
	// The supervisor forwards signals to the command's group; the
	// watchdog, in the supervisor's group, must outlive them (a terminal's
	// Ctrl-C reaches the whole group). Caught, not ignored: an ignored
	// signal stays ignored across exec, and a shell cannot even trap it.
	outlive := make(chan os.Signal, 4)
	signal.Notify(outlive, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	go func() {
		for range outlive {
		}
	}()
	chld := make(chan os.Signal, 16)
	signal.Notify(chld, syscall.SIGCHLD)

	path, err := exec.LookPath(fs.Arg(0))
	if err != nil {
		w.sayStartErr(err)
		return 127
	}
	proc, err := os.StartProcess(path, fs.Args(), &os.ProcAttr{
		Env:   os.Environ(),
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		Sys:   &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		w.sayStartErr(err)
		return 126
	}
	w.cmd = proc.Pid
	w.say("pid " + strconv.Itoa(w.cmd))
	return w.run(control, chld)
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// sayStartErr reports why the command did not start, and whether it was
// not found (127) or found and not executable (126), as a shell tells them.
func (w *watchdog) sayStartErr(err error) {
	kind := "exec"
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		kind = "notfound"
	}
	w.say("starterr " + kind + " " + oneLine(err.Error()))
}

type watchdog struct {
	report         *os.File
	self, cmd      int
	grace          time.Duration
	termAt, killAt int64 // CLOCK_MONOTONIC ns; 0: none
	exited         bool  // the command's exit was reported
}

func (w *watchdog) say(line string) { _, _ = w.report.WriteString(line + "\n") }

type controlMsg struct {
	verb       string
	term, kill int64
}

// controlPipe is the supervisor's pipe, read without blocking (the fd is
// O_NONBLOCK) and only by the watchdog's loop: when a deadline passes, the
// loop reads whatever the supervisor wrote before it, so an extension
// already sent always counts. Every line is one write shorter than
// PIPE_BUF, so it arrives whole.
type controlPipe struct {
	fd      int
	pending []byte // the start of a line not yet complete
}

// read returns the complete lines written so far, and whether the
// supervisor's end is closed.
func (p *controlPipe) read() (msgs []controlMsg, closed bool) {
	var buf [512]byte
	for {
		n, err := unix.Read(p.fd, buf[:])
		if err == unix.EINTR {
			continue
		}
		if n > 0 {
			p.pending = append(p.pending, buf[:n]...)
			continue
		}
		closed = err != unix.EAGAIN // 0 bytes: EOF; any other error: unreadable
		break
	}
	for {
		line, rest, ok := bytes.Cut(p.pending, []byte("\n"))
		if !ok {
			break
		}
		p.pending = rest
		fields := strings.Fields(string(line))
		if len(fields) == 0 {
			continue
		}
		m := controlMsg{verb: fields[0]}
		if m.verb == "extend" && len(fields) == 3 {
			m.term, _ = strconv.ParseInt(fields[1], 10, 64)
			m.kill, _ = strconv.ParseInt(fields[2], 10, 64)
		}
		msgs = append(msgs, m)
	}
	return msgs, closed
}

// watch sends on ready each time the pipe has something to read (or is
// closed), then waits for the loop to have read it; it never reads itself.
func (p *controlPipe) watch(ready chan<- struct{}, read <-chan struct{}, quit <-chan struct{}) {
	for {
		fds := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err == unix.EINTR {
			continue
		}
		select {
		case ready <- struct{}{}:
		case <-quit:
			return
		}
		select {
		case <-read:
		case <-quit:
			return
		}
	}
}

// run is the watchdog's loop; it returns when the tree is dead after a
// reap, or after the supervisor's pipe closed.
func (w *watchdog) run(control *controlPipe, chld <-chan os.Signal) int {
	ready, read, quit := make(chan struct{}), make(chan struct{}), make(chan struct{})
	defer close(quit)
	go control.watch(ready, read, quit)
	termT, killT := newStoppedTimer(), newStoppedTimer()
	arm := func() {
		termT.Stop()
		killT.Stop()
		if d, ok := untilMono(w.termAt); ok {
			termT.Reset(max(d, 0))
		}
		if d, ok := untilMono(w.killAt); ok {
			killT.Reset(max(d, 0))
		}
	}
	arm()
	w.reapChildren()
	// obey applies what the supervisor wrote; true when the watchdog's
	// work is over.
	obey := func() bool {
		msgs, closed := control.read()
		for _, m := range msgs {
			switch {
			case m.verb == "reap":
				w.killTree(chld)
				w.say("dead")
				return true
			case m.verb == "extend" && m.kill > w.killAt:
				// Only ever forward.
				w.termAt, w.killAt = max(m.term, w.termAt), m.kill
				arm()
			}
		}
		if closed {
			// The supervisor is gone (killed): nobody keeps the lease
			// alive or will release it. Stop the tree now.
			w.say("fired orphaned")
			w.stopTree(chld)
			return true
		}
		return false
	}
	// due reports whether the instant still stands after what the
	// supervisor wrote before it passed; if so, its timer stays stopped
	// (obey may have re-armed it at zero).
	due := func(at *int64, t *time.Timer) bool {
		if d, _ := untilMono(*at); d > 0 {
			return false
		}
		t.Stop()
		return true
	}
	for {
		select {
		case <-chld:
			w.reapChildren()
		case <-ready:
			if obey() {
				return 0
			}
			read <- struct{}{}
		case <-termT.C:
			if obey() {
				return 0
			}
			if due(&w.termAt, termT) && w.treeAlive() {
				w.say("fired term")
				w.signalTree(syscall.SIGTERM)
				w.signalTree(syscall.SIGCONT)
			}
		case <-killT.C:
			if obey() {
				return 0
			}
			if due(&w.killAt, killT) {
				if w.treeAlive() {
					w.say("fired kill")
				}
				w.killTree(chld)
			}
		}
	}
}

func newStoppedTimer() *time.Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}

// stopTree is the stop of an orphaned watchdog: SIGTERM (and SIGCONT) to
// every descendant, SIGKILL after the grace or at the kill deadline,
// whichever is first.
func (w *watchdog) stopTree(chld <-chan os.Signal) {
	w.signalTree(syscall.SIGTERM)
	w.signalTree(syscall.SIGCONT)
	wait := w.grace
	if d, ok := untilMono(w.killAt); ok && d < wait {
		wait = d
	}
	deadline := time.NewTimer(max(wait, 0))
	defer deadline.Stop()
	for w.treeAlive() {
		select {
		case <-chld:
			w.reapChildren()
		case <-deadline.C:
			w.killTree(chld)
			return
		case <-time.After(pollEvery):
		}
	}
}

// killTree sends SIGKILL to every descendant until none is alive. A
// process that forks meanwhile leaves its child to the next round; a child
// whose parent died is this process's child (subreaper), so nothing leaves
// the tree.
func (w *watchdog) killTree(chld <-chan os.Signal) {
	for {
		w.reapChildren()
		live := w.descendants()
		if len(live) == 0 {
			return
		}
		_ = syscall.Kill(-w.cmd, syscall.SIGKILL)
		for _, pid := range live {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		select {
		case <-chld:
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (w *watchdog) signalTree(sig syscall.Signal) {
	_ = syscall.Kill(-w.cmd, sig)
	for _, pid := range w.descendants() {
		_ = syscall.Kill(pid, sig)
	}
}

func (w *watchdog) treeAlive() bool { return len(w.descendants()) > 0 }

// reapChildren waits for every child that has exited (the command, and
// orphans reparented here), reporting the command's status once.
func (w *watchdog) reapChildren() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err != nil || pid <= 0 {
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			return
		}
		if pid == w.cmd && !w.exited {
			w.exited = true
			code := ws.ExitStatus()
			if ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
			w.say("exit " + strconv.Itoa(code))
		}
	}
}

// descendants lists the live (not zombie) processes below this one, read
// from /proc.
func (w *watchdog) descendants() []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	live := map[int]bool{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(string(f[1]))
		children[ppid] = append(children[ppid], pid)
		live[pid] = f[0][0] != 'Z' && f[0][0] != 'X'
	}
	var out []int
	queue := []int{w.self}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if live[c] {
				out = append(out, c)
			}
			queue = append(queue, c)
		}
	}
	return out
}
