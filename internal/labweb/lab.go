package labweb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/coordkit/coordkit/cluster"
	"github.com/coordkit/coordkit/cluster/labcmd"
)

// Errors of New, NewServer and Lab.Run.
var (
	// ErrNilCluster: New was given no cluster.
	ErrNilCluster = errors.New("labweb: nil cluster")
	// ErrTokenRequired: a server on a non-loopback address needs a token.
	ErrTokenRequired = errors.New("labweb: a non-loopback address needs a token (--http-token FILE)")
	// ErrTokenShort: a token shorter than MinTokenLen bytes, which could be
	// guessed.
	ErrTokenShort = errors.New("labweb: the token must be at least 16 bytes")
	// ErrNotFromWeb: the command is the shell's alone (exit), or names a
	// file outside the export directory.
	ErrNotFromWeb = errors.New("labweb: not from the page")
)

// Sources of commands, as CommandEvent.Source names them.
const (
	SourceWeb    = "web"
	SourceShell  = "shell"
	SourceScript = "script"
)

// Options tune a Lab. Zero fields take the defaults.
type Options struct {
	// RingSize is how many events the stream keeps for reconnecting
	// readers (default 4096).
	RingSize int
	// PollInterval is how often the cluster's status is sampled (default
	// 50ms); a command triggers a sample at once.
	PollInterval time.Duration
	// LoadInterval is how often the write load's figures are published
	// while it runs (default 250ms).
	LoadInterval time.Duration
	// ExportDir receives the files of history and timeline commands sent
	// from the page (default: a temporary directory removed by Close).
	ExportDir string
	// Echo, if set, is called after every command from the page
	// (SourceWeb), so that the shell can show it too.
	Echo func(ev CommandEvent, out labcmd.Output)
}

// Lab is the lab behind every front end: one labcmd.Session on one
// cluster, run one command at a time, and the Hub its changes go to. The
// cluster is observed by sampling cluster.Status (every PollInterval and
// right after each command); nothing in the cluster is changed for it.
type Lab struct {
	c    *cluster.Cluster
	sess *labcmd.Session
	hub  *Hub
	opts Options

	runMu sync.Mutex // one command at a time, from whichever front end

	exportDir string
	ownDir    bool

	kick   chan struct{}
	cancel context.CancelFunc
	wg     sync.WaitGroup
	close  sync.Once
}

// New starts observing c. Close it to stop the observer and any write load.
func New(c *cluster.Cluster, o Options) (*Lab, error) {
	if c == nil {
		return nil, ErrNilCluster
	}
	if o.RingSize <= 0 {
		o.RingSize = 4096
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 50 * time.Millisecond
	}
	if o.LoadInterval <= 0 {
		o.LoadInterval = 250 * time.Millisecond
	}
	sess, err := labcmd.NewSession(c)
	if err != nil {
		return nil, err
	}
	l := &Lab{c: c, sess: sess, opts: o, kick: make(chan struct{}, 1), exportDir: o.ExportDir}
	if l.exportDir == "" {
		d, err := os.MkdirTemp("", "coordkit-lab-export-")
		if err != nil {
			return nil, fmt.Errorf("labweb: export dir: %w", err)
		}
		l.exportDir, l.ownDir = d, true
	}
	l.hub = NewHub(o.RingSize, State{Nodes: c.Size(), BaseDelayMs: ms(c.Config().Link.Delay)})
	l.sample(nil)
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	l.wg.Add(1)
	go l.observe(ctx)
	return l, nil
}

// Hub is the lab's event stream.
func (l *Lab) Hub() *Hub { return l.hub }

// Cluster is the cluster the lab runs on.
func (l *Lab) Cluster() *cluster.Cluster { return l.c }

// Close stops the write load and the observer. It is safe to call twice.
func (l *Lab) Close() {
	l.close.Do(func() {
		l.runMu.Lock()
		l.sess.Close()
		l.runMu.Unlock()
		l.cancel()
		l.wg.Wait()
		if l.ownDir {
			_ = os.RemoveAll(l.exportDir)
		}
	})
}

// Run parses and runs one command line from source and publishes it. It
// returns the shell's Output and the sequence number of its command event.
// A line that does not parse returns its *labcmd.ParseError as err (and in
// Output.Err) and changes nothing; so does a line the page may not send
// (ErrNotFromWeb). A blank line returns the zero Output and seq 0.
func (l *Lab) Run(ctx context.Context, source, line string) (out labcmd.Output, seq uint64, err error) {
	cmd, err := labcmd.Parse(line)
	if err == nil && source == SourceWeb {
		cmd, err = l.webOnly(cmd)
	}
	if err != nil {
		var pe *labcmd.ParseError
		if errors.As(err, &pe) {
			out = labcmd.Output{Cmd: pe.Cmd, Err: err}
		} else {
			out = labcmd.Output{Cmd: cmd.Name, Err: err}
		}
		seq = l.publishCommand(source, line, out, 0)
		return out, seq, err
	}
	if cmd.Name == "" || cmd.Exit() {
		return labcmd.Output{}, 0, nil
	}
	start := time.Now()
	l.runMu.Lock()
	res, xerr := l.sess.Exec(ctx, cmd)
	l.runMu.Unlock()
	out = labcmd.Output{Cmd: cmd.Name, Result: res, Err: xerr}
	seq = l.publishCommand(source, line, out, time.Since(start))
	select {
	case l.kick <- struct{}{}:
	default:
	}
	return out, seq, nil
}

// webOnly refuses exit and confines history and timeline files to the
// export directory (a bare file name; the page downloads it from there).
func (l *Lab) webOnly(cmd labcmd.Command) (labcmd.Command, error) {
	if cmd.Exit() {
		return cmd, fmt.Errorf("%w: exit ends the lab from its shell", ErrNotFromWeb)
	}
	if cmd.File != "" {
		if cmd.File != filepath.Base(cmd.File) || strings.HasPrefix(cmd.File, ".") {
			return cmd, fmt.Errorf("%w: %s takes a bare file name from the page, not %q", ErrNotFromWeb, cmd.Name, cmd.File)
		}
		cmd.File = filepath.Join(l.exportDir, cmd.File)
	}
	return cmd, nil
}

// ExportPath is where a file a page command wrote lives, or "" if name is
// not a bare file name.
func (l *Lab) ExportPath(name string) string {
	if name == "" || name != filepath.Base(name) || strings.HasPrefix(name, ".") {
		return ""
	}
	return filepath.Join(l.exportDir, name)
}

func (l *Lab) publishCommand(source, line string, out labcmd.Output, took time.Duration) uint64 {
	raw, err := json.Marshal(out)
	if err != nil {
		raw, _ = json.Marshal(map[string]any{"cmd": out.Cmd, "ok": false, "error": err.Error()})
	}
	ev := CommandEvent{AtNs: l.c.Now(), Source: source, Line: line, Output: raw, Ms: ms(took)}
	seq, _ := l.hub.publish(TypeCommand, ev)
	if source == SourceWeb && l.opts.Echo != nil {
		l.opts.Echo(ev, out)
	}
	return seq
}

// observe samples the cluster every PollInterval and after each command,
// and the write load every LoadInterval, publishing what changed.
func (l *Lab) observe(ctx context.Context) {
	defer l.wg.Done()
	poll := time.NewTicker(l.opts.PollInterval)
	defer poll.Stop()
	loadT := time.NewTicker(l.opts.LoadInterval)
	defer loadT.Stop()
	var last []byte
	var lastLoad labcmd.LoadStats
	for {
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
			last = l.sample(last)
		case <-l.kick:
			last = l.sample(last)
			lastLoad = l.sampleLoad(lastLoad)
		case <-loadT.C:
			lastLoad = l.sampleLoad(lastLoad)
		}
	}
}

// sample publishes a Snapshot if the status or links differ from last
// (their JSON); it returns the JSON to compare the next sample with.
func (l *Lab) sample(last []byte) []byte {
	st := l.c.Status()
	infos := l.c.Links()
	links := make([]Link, len(infos))
	for i, li := range infos {
		links[i] = Link{From: li.From, To: li.To, DelayMs: ms(li.Delay), JitterMs: ms(li.Jitter), Loss: li.Loss, Cut: li.Cut}
	}
	snap := &Snapshot{Status: st, Links: links}
	key, _ := json.Marshal(snap)
	if last != nil && string(key) == string(last) {
		return last
	}
	snap.AtNs = l.c.Now()
	_, _ = l.hub.publish(TypeStatus, snap)
	return key
}

// sampleLoad publishes the load's figures while it runs, and once when
// it stops.
func (l *Lab) sampleLoad(last labcmd.LoadStats) labcmd.LoadStats {
	st := l.sess.Load()
	if !st.Running && st == last {
		return last
	}
	_, _ = l.hub.publish(TypeLoad, LoadEvent{AtNs: l.c.Now(), LoadStats: st})
	return st
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
