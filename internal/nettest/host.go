package nettest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A Host is a second machine for a test: a network namespace of its own,
// joined to the test's by a veth pair on a /24 of its own. Processes run
// there through Command; Cut takes the link down, so that from then on
// what either side sends is dropped in silence — no FIN, no RST, no ICMP —
// as when a machine dies or its cable is pulled. A closed socket or a
// killed process cannot show that: the kernel answers for them.
type Host struct {
	// Addr is the host's IP address, LocalAddr the test's end of the link:
	// a server the host must reach listens there.
	Addr, LocalAddr string

	ns, link, peer string
	t              testing.TB
}

// NewHost makes a Host, removed when the test ends. It needs root and
// iproute2's ip; without them the test is skipped, and under CI=true it
// fails (.ci/run installs iproute2, and CI runs as root).
func NewHost(t testing.TB) *Host {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil {
		unavailable(t, "ip not found: install Debian's iproute2")
	}
	if os.Geteuid() != 0 {
		unavailable(t, "a network namespace needs root")
	}
	id := fmt.Sprintf("%06x", rand.IntN(1<<24))
	subnet := fmt.Sprintf("10.%d.%d", 100+rand.IntN(100), rand.IntN(256))
	h := &Host{Addr: subnet + ".2", LocalAddr: subnet + ".1", ns: "ck" + id, link: "ckh" + id, peer: "ckp" + id, t: t}
	if out, err := exec.Command("ip", "netns", "add", h.ns).CombinedOutput(); err != nil {
		unavailable(t, fmt.Sprintf("ip netns add: %v: %s", err, strings.TrimSpace(string(out))))
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", h.ns).Run() }) // the veth pair goes with it
	h.ip("link", "add", h.link, "type", "veth", "peer", "name", h.peer)
	h.ip("link", "set", h.peer, "netns", h.ns)
	h.ip("addr", "add", h.LocalAddr+"/24", "dev", h.link)
	h.ip("link", "set", h.link, "up")
	h.ip("-n", h.ns, "addr", "add", h.Addr+"/24", "dev", h.peer)
	h.ip("-n", h.ns, "link", "set", h.peer, "up")
	h.ip("-n", h.ns, "link", "set", "lo", "up")
	return h
}

func unavailable(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("nettest: no second host: %s", why)
	}
	t.Skipf("nettest: no second host: %s", why)
}

func (h *Host) ip(args ...string) {
	h.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		h.t.Fatalf("nettest: ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// Command is exec.CommandContext of name and args, run on the host.
func (h *Host) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", h.ns, name}, args...)...)
}

// Cut takes the host's end of the link down: every packet between the
// host and the test's machine is dropped from now on, both ways, without
// a word to either (the test's end stays up, as a switch port does when
// the machine behind it dies).
func (h *Host) Cut() {
	h.t.Helper()
	h.ip("-n", h.ns, "link", "set", h.peer, "down")
}
