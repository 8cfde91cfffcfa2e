package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/etcdembed"
	"github.com/coordkit/coordkit/lock"
	"github.com/coordkit/coordkit/session"
)

// Step is one line of the story.
type Step struct {
	// At is the time since the story started.
	At    time.Duration `json:"-"`
	AtMS  float64       `json:"at_ms"`
	Actor string        `json:"actor"`
	Event string        `json:"event"`
	Text  string        `json:"text"`
	Token uint64        `json:"token,omitempty"`
}

// WriteSimple prints the step as a line of the narrative.
func (s Step) WriteSimple(w io.Writer) error {
	if s.Event == "heading" {
		_, err := fmt.Fprintf(w, "\n%s\n", s.Text)
		return err
	}
	if s.Event == "explain" {
		_, err := fmt.Fprintf(w, "%s\n", s.Text)
		return err
	}
	_, err := fmt.Fprintf(w, "  [%6.2fs] %-8s %s\n", s.At.Seconds(), s.Actor, s.Text)
	return err
}

// FencingConfig configures RunFencing.
type FencingConfig struct {
	// DataDir holds etcd's and the resources' data.
	DataDir string
	// TTL is the lease TTL of both holders.
	TTL time.Duration
	// Endpoints of an etcd to use instead of starting one.
	Endpoints []string
}

// FencingOutcome is what the story observed.
type FencingOutcome struct {
	TokenA, TokenB fencing.Token
	// ALostBeforeBAcquired: A's lock was signalled lost before B held it.
	ALostBeforeBAcquired bool
	// FencedRejectedLateWrite: the fenced resource answered 409 to A's late write.
	FencedRejectedLateWrite bool
	// UnfencedLostUpdate: the unfenced resource took A's late write over B's.
	UnfencedLostUpdate bool
	FencedFinal        string
	UnfencedFinal      string
}

// RunFencing plays the story and reports each step to emit as it happens.
func RunFencing(ctx context.Context, cfg FencingConfig, emit func(Step)) (FencingOutcome, error) {
	var out FencingOutcome
	start := time.Now()
	say := func(actor, event, text string, token fencing.Token) {
		at := time.Since(start)
		emit(Step{At: at, AtMS: float64(at.Microseconds()) / 1000, Actor: actor, Event: event, Text: text, Token: uint64(token)})
	}
	heading := func(text string) { emit(Step{Event: "heading", Text: text, Actor: "-"}) }
	explain := func(text string) { emit(Step{Event: "explain", Text: text, Actor: "-"}) }

	heading("coordkit demo: a lock is only as safe as the resource it protects")

	endpoints := cfg.Endpoints
	if len(endpoints) == 0 {
		srv, err := etcdembed.Start(ctx, etcdembed.Config{DataDir: filepath.Join(cfg.DataDir, "etcd")})
		if err != nil {
			return out, err
		}
		defer srv.Close()
		endpoints = srv.Endpoints()
		say("etcd", "setup", "started an embedded etcd at "+endpoints[0], 0)
	}
	fencedSrv, err := fencing.StartLocal(fencing.ResourceConfig{DataDir: filepath.Join(cfg.DataDir, "fenced")})
	if err != nil {
		return out, err
	}
	defer fencedSrv.Close()
	unfencedSrv, err := fencing.StartLocal(fencing.ResourceConfig{DataDir: filepath.Join(cfg.DataDir, "unfenced"), Unfenced: true})
	if err != nil {
		return out, err
	}
	defer unfencedSrv.Close()
	fenced, unfenced := fencedSrv.Client(5*time.Second), unfencedSrv.Client(5*time.Second)
	say("resource", "setup", "a resource that checks fencing tokens at "+fenced.BaseURL, 0)
	say("resource", "setup", "and one that does not (how most locks are used) at "+unfenced.BaseURL, 0)

	cliA, err := newClient(endpoints)
	if err != nil {
		return out, err
	}
	defer cliA.Close()
	cliB, err := newClient(endpoints)
	if err != nil {
		return out, err
	}
	defer cliB.Close()

	const name = "demo/nightly-report"
	const key = "report"
	// A's keepalives never run: the story freezes A right after its first
	// write, and a frozen process sends no keepalives.
	mA, err := lock.New(cliA, name, lock.WithTTL(cfg.TTL), lock.WithSessionOptions(session.WithKeepAliveInterval(time.Hour)))
	if err != nil {
		return out, err
	}
	defer mA.Close()
	mB, err := lock.New(cliB, name, lock.WithTTL(cfg.TTL))
	if err != nil {
		return out, err
	}
	defer mB.Close()

	heading("1. A takes the lock and starts writing")
	heldA, err := mA.Lock(ctx)
	if err != nil {
		return out, fmt.Errorf("holder A: lock: %w", err)
	}
	out.TokenA = heldA.Token()
	say("A", "acquired", fmt.Sprintf("holds %q with fencing token %d (the create revision of its key), lease TTL %s", name, heldA.Token(), cfg.TTL), heldA.Token())
	for _, r := range []*fencing.Client{fenced, unfenced} {
		if _, err := r.Put(ctx, key, "draft by A", heldA.Token(), name); err != nil {
			return out, fmt.Errorf("holder A: first write: %w", err)
		}
	}
	say("A", "write", fmt.Sprintf("writes report=%q with token %d: accepted by both resources", "draft by A", heldA.Token()), heldA.Token())

	type acquired struct {
		held *lock.Held
		at   time.Time
		err  error
	}
	bDone := make(chan acquired, 1)
	go func() {
		h, err := mB.Lock(ctx)
		bDone <- acquired{h, time.Now(), err}
	}()
	say("B", "waiting", "asks for the same lock and waits behind A", 0)

	heading("2. A freezes: a stop-the-world GC pause, a SIGSTOP, a VM migration")
	say("A", "frozen", "stops running: no keepalives, no work", 0)
	var aLostAt time.Time
	select {
	case <-heldA.Lost():
		aLostAt = time.Now()
		say("coordkit", "lost", fmt.Sprintf("A's local deadline passed: A's lock is marked lost (%v) — a running A would stop here, a frozen one cannot notice", heldA.Err()), 0)
	case <-ctx.Done():
		return out, ctx.Err()
	}
	var b acquired
	select {
	case b = <-bDone:
	case <-ctx.Done():
		return out, ctx.Err()
	}
	if b.err != nil {
		return out, fmt.Errorf("holder B: lock: %w", b.err)
	}
	defer b.held.Unlock(context.Background())
	out.TokenB = b.held.Token()
	out.ALostBeforeBAcquired = aLostAt.Before(b.at)
	say("etcd", "expired", "A's lease expired on the server and its key was deleted", 0)
	say("B", "acquired", fmt.Sprintf("holds the lock with token %d (%.0f ms after A's lock was marked lost)", b.held.Token(), float64(b.at.Sub(aLostAt).Microseconds())/1000), b.held.Token())
	for _, r := range []*fencing.Client{fenced, unfenced} {
		if _, err := r.Put(ctx, key, "final by B", b.held.Token(), name); err != nil {
			return out, fmt.Errorf("holder B: write: %w", err)
		}
	}
	say("B", "write", fmt.Sprintf("writes report=%q with token %d: accepted by both", "final by B", b.held.Token()), b.held.Token())

	heading("3. A wakes up and finishes its write, unaware that it lost the lock")
	_, err = fenced.Put(ctx, key, "draft by A (late)", heldA.Token(), name)
	var stale *fencing.StaleError
	switch {
	case errors.As(err, &stale):
		out.FencedRejectedLateWrite = true
		say("fenced", "rejected", fmt.Sprintf("409 stale fencing token: A's token %d < floor %d — B's work survives", stale.Token, stale.Floor), heldA.Token())
	case err != nil:
		return out, fmt.Errorf("holder A: late write to the fenced resource: %w", err)
	default:
		say("fenced", "accepted", "accepted the late write (this must not happen)", heldA.Token())
	}
	if _, err := unfenced.Put(ctx, key, "draft by A (late)", heldA.Token(), name); err != nil {
		return out, fmt.Errorf("holder A: late write to the unfenced resource: %w", err)
	}
	fv, err := fenced.Get(ctx, key)
	if err != nil {
		return out, err
	}
	uv, err := unfenced.Get(ctx, key)
	if err != nil {
		return out, err
	}
	out.FencedFinal, out.UnfencedFinal = fv.Value, uv.Value
	out.UnfencedLostUpdate = uv.Value != "final by B"
	say("unfenced", "accepted", fmt.Sprintf("200 OK: report is now %q — B's write is silently lost", uv.Value), heldA.Token())

	heading("What happened")
	explain(fmt.Sprintf(`  The lock did its job: A and B never held it at the same time as far as etcd
  knows, and coordkit told A it had lost the lock before B got it (%v). But A
  was frozen, so it could not listen. Any client can be paused between checking
  that it holds a lock and writing, so no lock alone can prevent this.
  Fencing can: every holder carries its token (A: %d, B: %d — they only grow),
  and the resource refuses a token lower than the highest it has seen.
  Fenced resource ends with %q; unfenced ends with %q.
  Next: 'coordctl lock NAME -- CMD' gives any program a token in
  $COORD_FENCING_TOKEN; 'coordctl resource serve' is a resource that checks it.`,
		out.ALostBeforeBAcquired, out.TokenA, out.TokenB, out.FencedFinal, out.UnfencedFinal))
	return out, nil
}

func newClient(endpoints []string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
}
