package lockbench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coordkit/coordkit/internal/bench"
)

// The agent load test: AgentClients clients share AgentLocks locks, each
// client locking and releasing one of them in a loop for Options.Duration.
const (
	AgentClients = 100
	AgentLocks   = 10
)

// agentLoadRows measures the agent load for coordkit's library and the
// API and adds its three rows (the other columns not measured: NaN).
func agentLoadRows(ctx context.Context, e *env, o Options, impls []impl, row func(metric, unit string) int, set func(int, impl, float64), progress func(string, ...any)) error {
	pre := fmt.Sprintf("load_%dx%d_", AgentClients, AgentLocks)
	perS, agentCPU, selfCPU := row(pre+"per_s", "per_s"), row(pre+"agent_cpu_us_per_acq", "us"), row(pre+"bench_cpu_us_per_acq", "us")
	for _, im := range impls {
		var (
			r   loadResult
			err error
		)
		switch im.key {
		case colCoordkit:
			progress("load: %d coordkit clients on %d locks, %s", AgentClients, AgentLocks, o.Duration)
			r, err = goLoad(ctx, e, AgentClients, AgentLocks, o.Duration)
			r.agentCPU = -1
		case colAPI:
			progress("load: one coordctl agent process, %d HTTP clients on %d locks, %s", AgentClients, AgentLocks, o.Duration)
			r, err = apiLoad(ctx, e, o.Coordctl, AgentClients, AgentLocks, o.Duration)
		default:
			for _, x := range []int{perS, agentCPU, selfCPU} {
				set(x, im, math.NaN())
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("lockbench: load, %s: %w", im.label, err)
		}
		progress("load, %s: %d acquisitions", im.label, r.acquisitions)
		set(perS, im, r.perSecond)
		set(selfCPU, im, float64(r.selfCPU.Microseconds()))
		if r.agentCPU < 0 {
			set(agentCPU, im, math.NaN())
		} else {
			set(agentCPU, im, float64(r.agentCPU.Microseconds()))
		}
	}
	return nil
}

// loadResult is one implementation's agent load run: acquisitions per
// second and CPU per acquisition, of this process (the embedded etcd and
// the clients) and, for the API, of the agent's process.
type loadResult struct {
	perSecond    float64
	selfCPU      time.Duration // per acquisition
	agentCPU     time.Duration // per acquisition; the API only
	acquisitions int64
}

// goLoad runs clients coordkit lockers (each its own etcd client and
// session) on locks names.
func goLoad(ctx context.Context, e *env, clients, locks int, d time.Duration) (loadResult, error) {
	var ls []bench.Locker
	defer func() { closeAll(ls) }()
	base := e.name("load")
	for i := range clients {
		l, err := etcdImpls[0].new(ctx, e, fmt.Sprintf("%s-%d", base, i%locks), true)
		if err != nil {
			return loadResult{}, err
		}
		ls = append(ls, l)
	}
	return runLoad(ctx, d, len(ls), func(ctx context.Context, i int) error {
		if err := ls[i].Lock(ctx); err != nil {
			return err
		}
		return ls[i].Unlock(context.WithoutCancel(ctx))
	}, nil)
}

// apiLoad starts `coordctl agent` on the run's etcd (a process of its own,
// so that its CPU is its own) and runs clients HTTP clients in this
// process against it, each hold one request as clients/python makes it:
// POST /v1/lock, read to "acquired", half-close, read to "released".
func apiLoad(ctx context.Context, e *env, coordctl string, clients, locks int, d time.Duration) (loadResult, error) {
	cmd := exec.CommandContext(ctx, coordctl, "--endpoints", strings.Join(e.endpoints, ","), "agent", "--listen", "127.0.0.1:0", "--ttl", "10s", "-w", "json")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return loadResult{}, err
	}
	if err := cmd.Start(); err != nil {
		return loadResult{}, err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	var ready struct {
		URL string `json:"url"`
	}
	line, err := bufio.NewReader(out).ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &ready)
	}
	if err != nil {
		return loadResult{}, fmt.Errorf("coordctl agent: %q: %w", line, err)
	}
	u, err := url.Parse(ready.URL)
	if err != nil {
		return loadResult{}, err
	}
	base := e.name("load")
	return runLoad(ctx, d, clients, func(ctx context.Context, i int) error {
		return holdOnce(ctx, u.Host, fmt.Sprintf("%s-%d", base, i%locks))
	}, func() (time.Duration, error) { return procCPU(cmd.Process.Pid) })
}

// holdOnce takes the lock name through the agent at addr and releases it.
func holdOnce(ctx context.Context, addr, name string) error {
	var dl net.Dialer
	c, err := dl.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
	defer stop()
	body, _ := json.Marshal(map[string]string{"name": name})
	fmt.Fprintf(c, "POST /v1/lock HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	until := func(event string) error {
		for sc.Scan() {
			if bytes.Contains(sc.Bytes(), []byte(`"event":"`+event+`"`)) {
				return nil
			}
			if bytes.Contains(sc.Bytes(), []byte(`"event":"error"`)) || bytes.Contains(sc.Bytes(), []byte(`"event":"lost"`)) {
				return fmt.Errorf("agent: %s", sc.Text())
			}
		}
		if err := sc.Err(); err != nil {
			return err
		}
		return fmt.Errorf("agent: the stream ended before %q", event)
	}
	if err := until("acquired"); err != nil {
		return err
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		return err
	}
	return until("released")
}

// runLoad runs do(i) in a loop for each of n clients for d, counting
// the calls that returned nil, and the CPU used meanwhile by this process
// and (other, when not nil) by the agent.
func runLoad(ctx context.Context, d time.Duration, n int, do func(context.Context, int) error, other func() (time.Duration, error)) (loadResult, error) {
	var (
		count    atomic.Int64
		wg       sync.WaitGroup
		errMu    sync.Mutex
		firstErr error
	)
	wctx, cancel := bench.Window(ctx, d)
	defer cancel()
	self0 := bench.CPUTime()
	var other0 time.Duration
	if other != nil {
		var err error
		if other0, err = other(); err != nil {
			return loadResult{}, err
		}
	}
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for wctx.Err() == nil {
				if err := do(wctx, i); err != nil {
					if wctx.Err() == nil {
						errMu.Lock()
						firstErr = err
						errMu.Unlock()
						cancel()
					}
					return
				}
				if time.Since(start) <= d {
					count.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return loadResult{}, firstErr
	}
	if err := ctx.Err(); err != nil {
		return loadResult{}, err
	}
	k := count.Load()
	if k == 0 {
		return loadResult{}, fmt.Errorf("no acquisition in %s", d)
	}
	res := loadResult{perSecond: float64(k) / d.Seconds(), selfCPU: (bench.CPUTime() - self0) / time.Duration(k), acquisitions: k}
	if other != nil {
		o, err := other()
		if err != nil {
			return loadResult{}, err
		}
		res.agentCPU = (o - other0) / time.Duration(k)
	}
	return res, nil
}

// clockTick is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// procCPU is the CPU time (utime+stime) of process pid so far, from
// /proc/PID/stat, in clock ticks.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q, stime %q", pid, f[11], f[12])
	}
	return time.Duration(ut+st) * clockTick, nil
}
