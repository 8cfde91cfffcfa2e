package labweb

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/chzyer/readline"

	"github.com/coordkit/coordkit/cluster"
	"github.com/coordkit/coordkit/cluster/labcmd"
)

// ShellConfig says where a Shell's results go.
type ShellConfig struct {
	// Print receives the Output of every line that is not blank or exit.
	Print func(labcmd.Output)
	// Echo receives every command the page ran once Serve has started it;
	// nil: Print its Output.
	Echo func(ev CommandEvent, out labcmd.Output)
}

// Shell is `coordctl lab`'s front end: it reads command lines (from a
// script, a reader or a terminal with line editing), runs them on a
// labcmd.Session of its own or, once Serve has started the page, through
// the page's Lab, so that both see one session, and hands each result to
// Print. Print and Echo are never called at the same time.
type Shell struct {
	sess   *labcmd.Session
	web    *Lab
	srv    *Server
	source string
	cfg    ShellConfig
	mu     sync.Mutex // the page's commands print from another goroutine
	exited bool
}

// NewShell returns a shell on c. It returns ErrNilCluster if c is nil.
func NewShell(c *cluster.Cluster, cfg ShellConfig) (*Shell, error) {
	if c == nil {
		return nil, ErrNilCluster
	}
	sess, err := labcmd.NewSession(c)
	if err != nil {
		return nil, err
	}
	if cfg.Print == nil {
		cfg.Print = func(labcmd.Output) {}
	}
	if cfg.Echo == nil {
		cfg.Echo = func(_ CommandEvent, out labcmd.Output) { cfg.Print(out) }
	}
	return &Shell{sess: sess, cfg: cfg, source: SourceShell}, nil
}

// Serve starts the page's Lab and Server on the shell's cluster; from now
// on the shell's lines go through it, as SourceScript when script is set
// (SourceShell otherwise). Its errors are New's and NewServer's
// (ErrTokenRequired, ErrTokenShort, the listener's). Close stops both.
func (sh *Shell) Serve(cfg ServerConfig, script bool) (*Server, error) {
	lab, err := New(sh.sess.Cluster(), Options{Echo: sh.echo})
	if err != nil {
		return nil, err
	}
	srv, err := NewServer(lab, cfg)
	if err != nil {
		lab.Close()
		return nil, err
	}
	sh.web, sh.srv = lab, srv
	if script {
		sh.source = SourceScript
	}
	return srv, nil
}

// Close stops the server, the page's Lab and the session's write load.
func (sh *Shell) Close() {
	if sh.srv != nil {
		_ = sh.srv.Close()
	}
	if sh.web != nil {
		sh.web.Close()
	}
	sh.sess.Close()
}

// Exited reports whether a line was exit.
func (sh *Shell) Exited() bool { return sh.exited }

// Line runs one command line and prints its result; it reports whether
// the shell should stop (the line was exit).
func (sh *Shell) Line(ctx context.Context, line string) bool {
	if cmd, err := labcmd.Parse(line); err == nil && (cmd.Exit() || cmd.Name == "") {
		sh.exited = cmd.Exit()
		return sh.exited
	}
	var out labcmd.Output
	if sh.web != nil {
		out, _, _ = sh.web.Run(ctx, sh.source, line)
	} else {
		out = sh.sess.Run(ctx, line)
	}
	sh.print(func() { sh.cfg.Print(out) })
	return false
}

// MaxLine is the longest command line Script reads, in bytes.
const MaxLine = 1 << 20

// Script runs the lines of r until r ends, a line is exit or ctx ends. It
// returns r's error (bufio.ErrTooLong for a line over MaxLine).
func (sh *Shell) Script(ctx context.Context, r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), MaxLine)
	for sc.Scan() {
		if ctx.Err() != nil || sh.Line(ctx, sc.Text()) {
			return nil
		}
	}
	return sc.Err()
}

// Terminal runs lines read from the terminal with line editing and
// history (kept in history, if not empty; the prompt "lab> " and its
// echo go to out and errOut) until end of input, exit, ^C on an empty
// line, or ctx ends.
func (sh *Shell) Terminal(ctx context.Context, history string, out, errOut io.Writer) error {
	rl, err := readline.NewEx(&readline.Config{
		Prompt:          "lab> ",
		HistoryFile:     history,
		InterruptPrompt: "^C",
		EOFPrompt:       "exit",
		Stdout:          out,
		Stderr:          errOut,
	})
	if err != nil {
		return fmt.Errorf("lab: terminal: %w", err)
	}
	defer rl.Close()
	for ctx.Err() == nil {
		line, err := rl.Readline()
		if errors.Is(err, readline.ErrInterrupt) {
			if line == "" {
				return nil
			}
			continue
		}
		if err != nil {
			return nil // EOF
		}
		if sh.Line(ctx, line) {
			return nil
		}
	}
	return nil
}

// RunConfig says where Run reads its command lines.
type RunConfig struct {
	// Terminal reads from the terminal with line editing and history
	// (History, when not empty), prompting on Out and ErrOut; otherwise
	// the lines come from In.
	Terminal bool
	History  string
	In       io.Reader
	// Out and ErrOut are the terminal's; ErrOut also receives the note
	// that the page goes on being served.
	Out, ErrOut io.Writer
}

// Run runs the shell's command lines (Terminal, else Script of In) and
// then, while Serve's page is up and no line was exit, keeps serving until
// ctx ends. It returns Terminal's error, or In's wrapped as "lab: read
// commands".
func (sh *Shell) Run(ctx context.Context, c RunConfig) error {
	if c.Terminal {
		if err := sh.Terminal(ctx, c.History, c.Out, c.ErrOut); err != nil {
			return err
		}
	} else if err := sh.Script(ctx, c.In); err != nil {
		return fmt.Errorf("lab: read commands: %w", err)
	}
	if sh.exited || sh.srv == nil || ctx.Err() != nil {
		return nil
	}
	fmt.Fprintf(c.ErrOut, "lab: commands done; serving the page until interrupted\n")
	<-ctx.Done()
	return nil
}

// echo prints a command the page ran.
func (sh *Shell) echo(ev CommandEvent, out labcmd.Output) {
	sh.print(func() { sh.cfg.Echo(ev, out) })
}

func (sh *Shell) print(fn func()) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	fn()
}
