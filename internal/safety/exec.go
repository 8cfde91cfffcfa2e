package safety

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/childproc"
)

// RMWResult is the line `coordctl check rmw` prints: what one
// read-modify-write under a `coordctl lock` did.
type RMWResult struct {
	ID      string  `json:"id"`
	Token   uint64  `json:"token"`
	Fence   Outcome `json:"fence"`
	Read    int     `json:"read"`
	ReadOK  bool    `json:"read_ok"`
	Wrote   int     `json:"wrote"`
	Write   Outcome `json:"write"`
	Message string  `json:"message,omitempty"`
}

// execProc is a running `coordctl lock` client.
type execProc struct {
	pid   int
	start int64
	held  bool // a Python client said it holds the lock (heldLine)
}

// heldLine is the line a Python process client prints once it holds the
// lock: the nemesis pauses or kills it only after that (a `coordctl lock`
// client: after its command appears).
const heldLine = "held\n"

// procOut is a process client's stdout: kept for its result lines, and
// watched for heldLine.
type procOut struct {
	r   *run
	p   *execProc
	buf bytes.Buffer
}

func (o *procOut) Write(b []byte) (int, error) {
	o.buf.Write(b)
	if bytes.Contains(o.buf.Bytes(), []byte(heldLine)) {
		o.r.mu.Lock()
		o.p.held = true
		o.r.mu.Unlock()
	}
	return len(b), nil
}

// execClient is the client number of the process clients in the history.
func (r *run) execClient() int { return r.cfg.Clients + 1 }

// execLoop runs `coordctl lock safety -- coordctl check rmw ...` (for an
// election, `coordctl sidecar --election safety ... -- coordctl check rmw
// ...`) over and over until ctx is done: the same read-modify-write as the
// in-process clients, by real processes that the nemesis can SIGSTOP.
func (r *run) execLoop(ctx context.Context) {
	for n := 1; ctx.Err() == nil; n++ {
		id := fmt.Sprintf("x-%d", n)
		r.execOnce(ctx, id)
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (r *run) execOnce(ctx context.Context, id string) {
	bin := r.cfg.Coordctl
	var args []string
	switch {
	case r.py != nil:
		bin, args = r.pyExec(id)
	case r.pg != nil:
		args = r.pgExecArgs(bin, id)
	case r.redsync != nil:
		// The same supervisor role as `coordctl lock`, with redsync: no
		// loss detection, so nothing stops the command when the lock
		// expires, and no token: the command does not fence.
		args = append(args, "check", "redsync-lock", "--redis", r.redsync.addr, "--prefix", r.redsync.prefix,
			"--ttl", r.cfg.TTL.String(), "--timeout", lockTimeout.String(), "--dial-timeout", "2s")
	case r.cfg.Target == TargetElection:
		// The sidecar's child mode: the command runs while this instance
		// leads; when it exits, the sidecar resigns and exits.
		args = append(args, r.etcdFlags()...)
		args = append(args, "sidecar", "--election", Scope, "--id", id, "--listen", "127.0.0.1:0",
			"--ttl", r.cfg.TTL.String(), "--kill-grace", "500ms")
		if r.cfg.Policy != "" {
			args = append(args, "--policy", string(r.cfg.Policy), "--priority", "1", "--version", "1.1.0")
		}
	default:
		args = append(args, r.etcdFlags()...)
		args = append(args, "lock", Scope, "--ttl", r.cfg.TTL.String(), "--timeout", lockTimeout.String(), "--kill-grace", "500ms")
	}
	if r.pg == nil && r.py == nil {
		args = append(args, "--", bin, "check", "rmw", "--url", r.resURL, "--key", counterKey, "--id", id,
			"--work", r.rmwWork().String(), "--fence="+strconv.FormatBool(!r.cfg.NoFenceFirst && !r.tokenless()),
			"--if-match="+strconv.FormatBool(r.cfg.IfMatch), "-w", "json")
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	proc := &execProc{}
	out := &procOut{r: r, p: proc}
	cmd.Stdout = out
	var errOut bytes.Buffer
	if r.py != nil {
		cmd.Stderr = &errOut // a Python traceback says why a client did nothing
	}
	cmd.Env = os.Environ()
	start := r.now()
	if err := cmd.Start(); err != nil {
		r.progressf("exec client: %v", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
		return
	}
	r.mu.Lock()
	proc.pid, proc.start = cmd.Process.Pid, start
	r.proc = proc
	r.mu.Unlock()
	waited := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGCONT)
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		case <-waited:
		}
	}()
	waitErr := cmd.Wait()
	close(waited)
	end := r.now()
	r.mu.Lock()
	r.proc = nil
	r.execSpans[id] = [2]int64{start, end}
	stopped := r.stoppedPid == cmd.Process.Pid
	r.mu.Unlock()

	// One line per tenure: a sidecar runs the command again each time it is
	// elected. A tenure killed before it could print is left to the log.
	c := r.execClient()
	results := 0
	for _, line := range strings.Split(out.buf.String(), "\n") {
		var res RMWResult
		if json.Unmarshal([]byte(line), &res) != nil || !strings.HasPrefix(res.ID, id+".") {
			continue
		}
		results++
		// The process's own times are not on our clock: each operation is
		// given the whole life of the process as its interval, which is
		// wider than the truth and so never makes a correct history look
		// wrong.
		r.record(Op{Client: c, Kind: OpAcquire, Token: res.Token, Call: start, Return: end, Outcome: OK})
		if res.Fence != "" {
			r.record(Op{Client: c, Kind: OpFence, Token: res.Token, Call: start, Return: end, Outcome: res.Fence})
		}
		if res.ReadOK {
			r.record(Op{Client: c, Kind: OpRead, Token: res.Token, Value: res.Read, Call: start, Return: end, Outcome: OK})
		}
		if res.Write != "" {
			r.record(Op{Client: c, Kind: OpWrite, Token: res.Token, Value: res.Wrote, ID: res.ID, Call: start, Return: end, Outcome: res.Write})
		}
		if hook := r.cfg.onProcessWrite; hook != nil && res.Write == OK {
			hook()
		}
		if hook := r.cfg.onLateWrite; hook != nil && stopped && res.Write == OK {
			hook(r.loggedAfterLater(ctx, res.ID, res.Token))
		}
	}
	var exit *exec.ExitError
	if r.py != nil && results == 0 && errors.As(waitErr, &exit) && exit.ExitCode() > 0 {
		r.progressf("Python client %s exited %d without a result: %s", id, exit.ExitCode(), pyFailure(exit.ExitCode(), errOut.String()))
	}
}

// pyFailure says why a Python process client exited with code: rmw.py's
// exit 3, or the last line of what it wrote to stderr (a traceback's
// error).
func pyFailure(code int, stderr string) string {
	if code == 3 {
		return fmt.Sprintf("the lock was not acquired within %s", lockTimeout)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	return lines[len(lines)-1]
}

// loggedAfterLater reports whether the resource's log has the write id
// (of token) after an accepted write of a later token: the late write of
// a paused process client that, unfenced, set the counter back. (Its ops
// span the whole process, so the log, not their times, orders it.)
func (r *run) loggedAfterLater(ctx context.Context, id string, token uint64) bool {
	writes, _, err := r.res.Log(ctx) // in the order the resource applied them
	if err != nil {
		return false
	}
	later := false
	for _, w := range writes {
		if w.ID == id {
			return later
		}
		later = later || w.Token > token
	}
	return false
}

func (r *run) etcdFlags() []string {
	return []string{"--endpoints", strings.Join(r.cluster.Endpoints(), ","), "--dial-timeout", "2s", "--command-timeout", "3s"}
}

// execOpsFromLog gives a write in the log by a process client that
// did not report it (killed after writing) an op with an unknown outcome
// over the process's life. Called with r.mu held.
func (r *run) execOpsFromLog(h *History) {
	have := map[string]bool{}
	for _, op := range h.Ops {
		if op.Kind == OpWrite {
			have[op.ID] = true
		}
	}
	for _, w := range h.Writes {
		proc, _, _ := strings.Cut(w.ID, ".")
		span, ok := r.execSpans[proc]
		if !ok || have[w.ID] {
			continue
		}
		h.Ops = append(h.Ops, Op{Client: r.execClient(), Kind: OpWrite, Token: w.Token, Value: w.Value, ID: w.ID,
			Call: span[0], Return: span[1], Outcome: Unknown})
	}
}

// rmwWork is the process clients' time between their read and their write,
// and stopAfter how long after their command appears the nemesis stops
// them: inside that window, after the read.
const (
	rmwWork   = 800 * time.Millisecond
	stopAfter = 300 * time.Millisecond
)

// sigstop freezes (kill-client: kills) the running `coordctl lock` process and the command it
// runs (its own process group) once the command has started and had time
// to read, that is while the lock is held and the write is pending. Undo
// continues the command 50ms before its supervisor: the race between the
// command's write and the supervisor's SIGTERM on loss then goes to the
// write, the worst case, which is the case the check is for.
func (r *run) sigstop(ctx context.Context, i int, s Step) func() {
	deadline := time.Now().Add(s.Hold)
	var pid, child int
	var seen time.Time
	for time.Now().Before(deadline) && ctx.Err() == nil {
		var p execProc
		r.mu.Lock()
		if r.proc != nil {
			p = *r.proc
		}
		r.mu.Unlock()
		c := 0
		switch {
		case p.pid == 0:
		case r.py != nil:
			if p.held {
				c = p.pid // a Python process client holds and writes itself
			}
		default:
			c = commandOf(p.pid)
		}
		switch {
		case c == 0 || c != child:
			child, seen = c, time.Now()
		case time.Since(seen) >= stopAfter:
			pid = p.pid
		}
		if pid != 0 {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
	if pid == 0 {
		r.progressf("sigstop: no process client held the lock, skipped")
		return func() {}
	}
	if s.Kind == FaultKillClient {
		return r.killClient(i, s, pid, child)
	}
	alone := s.Kind == FaultSigstopSupervisor
	_ = syscall.Kill(pid, syscall.SIGSTOP)
	if !alone {
		_ = syscall.Kill(-child, syscall.SIGSTOP)
	}
	r.mu.Lock()
	r.stoppedPid = pid
	r.mu.Unlock()
	r.countFault(s.Kind)
	r.touched(i, fmt.Sprintf("process client pid %d (holding the lock)", pid))
	switch {
	case r.py != nil:
		r.effective(i, "stopped a Python process client while it held the lock")
	case alone:
		r.effective(i, "stopped a coordctl process client, not its command, while it held the lock")
	default:
		r.effective(i, "stopped a coordctl process client while it held the lock")
	}
	what := map[Target]string{TargetLock: "lock", TargetElection: "sidecar"}[r.cfg.Target]
	if r.redsync != nil {
		what = "check redsync-lock"
	}
	if r.pg != nil {
		what = "check pg-advisory-lock"
	}
	if r.py != nil {
		lock := map[bool]string{true: "redis-py's Lock", false: "the coordination API"}[r.redsync != nil]
		r.progressf("SIGSTOP Python client (pid %d, holding through %s) for %s", pid, lock, s.Hold.Round(time.Millisecond))
		return func() { _ = syscall.Kill(-pid, syscall.SIGCONT) }
	}
	if alone {
		r.progressf("SIGSTOP coordctl %s (pid %d) alone, its command (pid %d) running on, for %s", what, pid, child, s.Hold.Round(time.Millisecond))
		return func() { _ = syscall.Kill(pid, syscall.SIGCONT) }
	}
	r.progressf("SIGSTOP coordctl %s (pid %d) and its command (pid %d) for %s", what, pid, child, s.Hold.Round(time.Millisecond))
	return func() {
		_ = syscall.Kill(-child, syscall.SIGCONT)
		time.Sleep(50 * time.Millisecond)
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
}

// killClient SIGKILLs the process client pid that holds the lock, and
// the command it runs (child's process group), as a crash would: its
// connection to the agent (or its session) ends, the next holder may go.
func (r *run) killClient(i int, s Step, pid, child int) func() {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	if child != pid {
		_ = syscall.Kill(-child, syscall.SIGKILL)
	}
	r.countFault(s.Kind)
	r.touched(i, fmt.Sprintf("process client pid %d (holding the lock)", pid))
	r.effective(i, "killed a process client while it held the lock")
	r.progressf("SIGKILL process client pid %d (and its command, pid %d) while it held the lock", pid, child)
	return func() {}
}

// commandOf returns the command a process client runs: its child, or,
// when that child is coordctl's watchdog (childproc.WatchdogArg), the
// watchdog's child; 0 if none yet.
func commandOf(pid int) int {
	c := childOf(pid)
	if c == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", c))
	if err == nil && len(bytes.Split(b, []byte{0})) > 1 && string(bytes.Split(b, []byte{0})[1]) == childproc.WatchdogArg {
		return childOf(c)
	}
	return c
}

// rmwWork is the process clients' work: rmwWork, or, when the nemesis
// freezes their coordctl alone (sigstop-supervisor), twice the TTL, so that
// a command nothing stops writes after its lease expired and another
// holder wrote: the late write that only the watchdog prevents.
func (r *run) rmwWork() time.Duration {
	for _, s := range r.steps {
		if s.Kind == FaultSigstopSupervisor {
			return max(rmwWork, 2*r.cfg.TTL)
		}
	}
	return rmwWork
}

// childOf returns a child of pid, 0 if none. Linux lists children per
// thread (the one that forked them), so every task of pid is read.
func childOf(pid int) int {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0
	}
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			if c, err := strconv.Atoi(f[0]); err == nil {
				return c
			}
		}
	}
	return 0
}

// RMWOptions is one read-modify-write of `coordctl check rmw`.
type RMWOptions struct {
	Key, ID string // the counter's key; the write's id, tagged .TOKEN
	Token   fencing.Token
	Scope   string
	Work    time.Duration // between the read and the write
	Fence   bool          // fence before reading
	IfMatch bool          // write only if the version is still the one read
}

// HTTPRMW is what a process client does under its lock: fence (with
// o.Fence), read the counter, wait o.Work, write the value + 1 with the
// token; it returns what happened and the error that ended it, if any
// (fencing.ErrStale when refused as stale).
func HTTPRMW(ctx context.Context, fc fencing.Client, o RMWOptions) (RMWResult, error) {
	// The id names the tenure: a sidecar runs its command again, with the
	// same arguments, each time it is elected.
	res := RMWResult{ID: fmt.Sprintf("%s.%d", o.ID, o.Token), Token: uint64(o.Token)}
	fail := func(err error) (RMWResult, error) {
		res.Message = err.Error()
		return res, err
	}
	if o.Fence {
		_, err := fc.Fence(ctx, o.Token, o.Scope)
		if res.Fence = outcomeOf(err); err != nil {
			return fail(err)
		}
	}
	e, err := fc.Get(ctx, o.Key)
	var version uint64
	switch {
	case err == nil:
		version = e.Version
		if res.Read, _, err = ParseValue(e.Value); err != nil {
			return fail(err)
		}
	case errors.Is(err, fencing.ErrNotFound):
	default:
		return fail(err)
	}
	res.ReadOK = true
	if o.Work > 0 {
		select {
		case <-time.After(o.Work):
		case <-ctx.Done():
			return fail(ctx.Err())
		}
	}
	res.Wrote = res.Read + 1
	var putOpts []fencing.PutOption
	if o.IfMatch {
		putOpts = append(putOpts, fencing.IfMatch(version))
	}
	_, err = fc.Put(ctx, o.Key, FormatValue(res.Wrote, res.ID), o.Token, o.Scope, putOpts...)
	if res.Write = outcomeOf(err); err != nil {
		return fail(err)
	}
	return res, nil
}

// WriteSimple writes the result as `coordctl check rmw` prints it.
func (r RMWResult) WriteSimple(w io.Writer) error {
	_, err := fmt.Fprintf(w, "id=%s token=%d fence=%s read=%d wrote=%d write=%s %s\n", r.ID, r.Token, r.Fence, r.Read, r.Wrote, r.Write, r.Message)
	return err
}

// Err is what ended the read-modify-write: nil when its write was
// accepted, an error matching fencing.ErrStale when its fence or write was
// refused as stale, another error (its Message) otherwise.
func (r RMWResult) Err() error {
	switch {
	case r.Write == OK:
		return nil
	case r.Write == Stale || r.Fence == Stale:
		return fmt.Errorf("%s: %w", r.Message, fencing.ErrStale)
	}
	return errors.New(r.Message)
}
