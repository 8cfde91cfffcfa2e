package safety

import (
	"math/rand/v2"
	"time"
)

// FaultKind names a fault the nemesis applies.
type FaultKind string

// Fault kinds.
const (
	FaultIsolateMember FaultKind = "isolate-member"  // blackhole a member's peer links
	FaultIsolateLeader FaultKind = "isolate-leader"  // the same, to whichever member leads at that moment
	FaultCutClient     FaultKind = "cut-client-link" // blackhole the client link of a member
	FaultStopMember    FaultKind = "stop-member"     // stop a member, restart it after the hold
	FaultFreezeClient  FaultKind = "freeze-client"   // pause a client's keepalives and work past its TTL (in process)
	FaultSigstop       FaultKind = "sigstop-child"   // SIGSTOP a `coordctl lock` process and its child past the TTL
	// SIGSTOP a `coordctl lock` process alone past the TTL: its command
	// runs on, and only its watchdog can stop it (not in the default kinds:
	// coordctl check --faults names it).
	FaultSigstopSupervisor FaultKind = "sigstop-supervisor"
	// SIGKILL a process client (its process group; a `coordctl lock`
	// process and its command) while it holds the lock, after it read:
	// in the default kinds with Python process clients.
	FaultKillClient FaultKind = "kill-client"
)

// knownFaults are the kinds a schedule or --faults may name.
var knownFaults = []FaultKind{FaultIsolateMember, FaultIsolateLeader, FaultCutClient, FaultStopMember,
	FaultFreezeClient, FaultSigstop, FaultSigstopSupervisor, FaultCutLock, FaultKillClient}

// Step is one fault of a schedule: apply it, hold it, heal, stay quiet.
type Step struct {
	Kind FaultKind `json:"kind"`
	// Member is the target member (1..3) of isolate-member, cut-client-link
	// and stop-member.
	Member int `json:"member,omitempty"`
	// Client is the client to freeze when no client holds the lock at that
	// moment (the holder is preferred: freezing it is what bites).
	Client int           `json:"client,omitempty"`
	Hold   time.Duration `json:"hold"`
	Quiet  time.Duration `json:"quiet"`
	// At, when set, is the offset from the start of the run at which the
	// step is applied (a recorded or compacted schedule); zero: right after
	// the previous step's quiet time. JSON writes durations as "1.5s".
	At time.Duration `json:"at,omitempty"`
}

// Schedule returns the fault schedule for seed: rounds in which every kind
// appears once in a shuffled order, enough steps for d. Freezes hold for
// 1.5–2× the TTL so the lease surely expires; other faults hold 1.5–3s.
// The schedule is a pure function of its arguments, so a seed replays the
// same faults in the same order; which member leads or holds the lock when
// a step fires depends on timing and is not replayed exactly.
func Schedule(seed int64, kinds []FaultKind, members, clients int, ttl, d time.Duration) []Step {
	if len(kinds) == 0 || members < 1 || clients < 1 {
		return nil
	}
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(seed)^0x9e3779b97f4a7c15))
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rng.Int64N(int64(hi-lo)+1)) }
	var steps []Step
	var total time.Duration
	for total < d {
		round := append([]FaultKind(nil), kinds...)
		rng.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		for _, k := range round {
			s := Step{Kind: k, Member: 1 + rng.IntN(members), Client: 1 + rng.IntN(clients), Quiet: between(500*time.Millisecond, 1500*time.Millisecond)}
			switch k {
			case FaultFreezeClient, FaultSigstop, FaultSigstopSupervisor:
				s.Hold = between(ttl*3/2, 2*ttl)
			case FaultStopMember:
				s.Hold = between(1500*time.Millisecond, 3*time.Second)
			default:
				s.Hold = between(1500*time.Millisecond, 3*time.Second)
			}
			steps = append(steps, s)
			total += s.Hold + s.Quiet
			if total >= d {
				break
			}
		}
	}
	return steps
}
