package hold

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"
)

// How coordctl lock and sem take what they then run a command under.

// Acquisition says how to take a lock or a slot: try once (Try), wait for
// ever (Timeout 0), or wait at most Timeout and, when it passes first, try
// once more within LastTry (so that even a 1ns timeout takes a free lock).
type Acquisition struct {
	Timeout time.Duration
	Try     bool
	LastTry time.Duration
	// Notice, if set, ends with the wait: once the timeout has passed or
	// ctx has ended, it prints nothing more. What follows then (the last
	// try, the waiter removing its key) is no wait to tell anyone about,
	// and on a loaded machine it can outlast WaitNoticeAfter.
	Notice *WaitNotice
}

// Acquire takes a hold as a says, with wait (block until granted) and
// tryOnce (fail at once if held elsewhere). timedOut reports that the wait
// ended by the timeout; err is then the wait's error.
func Acquire[H any](ctx context.Context, a Acquisition, wait, tryOnce func(context.Context) (H, error)) (h H, timedOut bool, err error) {
	if a.Try {
		h, err = tryOnce(ctx)
		return h, false, err
	}
	if a.Timeout <= 0 {
		defer a.endNoticeWith(ctx)()
		h, err = wait(ctx)
		return h, false, err
	}
	actx, cancel := context.WithTimeout(ctx, a.Timeout)
	defer cancel()
	defer a.endNoticeWith(actx)()
	h, err = wait(actx)
	if err == nil || ctx.Err() != nil || actx.Err() == nil {
		return h, false, err
	}
	tctx, tcancel := context.WithTimeout(ctx, a.LastTry)
	defer tcancel()
	if h, terr := tryOnce(tctx); terr == nil {
		return h, false, nil
	}
	return h, true, err
}

// endNoticeWith stops a.Notice when ctx ends, until the func it returns is
// called.
func (a Acquisition) endNoticeWith(ctx context.Context) (stop func() bool) {
	if a.Notice == nil {
		return func() bool { return false }
	}
	return context.AfterFunc(ctx, a.Notice.Stop)
}

// WaitNoticeAfter is how long a wait lasts before a WaitNotice says so.
const WaitNoticeAfter = 500 * time.Millisecond

// WaitNotice prints, once, that an acquisition has been waiting for a
// while and for whom; a short wait goes unmentioned. Its zero value with
// Out set works.
type WaitNotice struct {
	Out   io.Writer
	mu    sync.Mutex
	timer *time.Timer
	done  bool
}

// Waiting prints msg after WaitNoticeAfter unless Stop comes first; only
// the first call counts.
func (n *WaitNotice) Waiting(msg string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.done || n.timer != nil {
		return
	}
	n.timer = time.AfterFunc(WaitNoticeAfter, func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		if !n.done {
			fmt.Fprintln(n.Out, msg)
		}
	})
}

// Stop ends the notice: nothing is printed after it returns.
func (n *WaitNotice) Stop() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.done = true
	if n.timer != nil {
		n.timer.Stop()
	}
}
