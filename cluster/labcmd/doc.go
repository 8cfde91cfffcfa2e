// Package labcmd is the command language of the Raft lab: the lines a user
// types at `coordctl lab` ("put x 1", "partition 1,2|3,4,5", "get x --node 3
// --mode stale"), parsed into a Command and run against a *cluster.Cluster.
//
// The shell (`coordctl lab`, internal/labweb.Shell) and the live web page
// (internal/labweb, which posts one line at a time) drive the lab through the
// same two steps; the scenarios drive a *cluster.Cluster directly, not
// through this language:
//
//	cmd, err := labcmd.Parse(line)   // syntax only: no cluster needed
//	res, err := sess.Exec(ctx, cmd)  // resolves nodes, runs, returns a Result
//
// or both at once with Session.Run, which returns the Output the shell
// prints. One command table (see Commands and Help) drives both parsing and
// the help text, so they cannot drift apart.
//
// What is guaranteed:
//   - Parse needs no cluster and never blocks. It rejects what can be
//     rejected without one: unknown commands (ErrUnknownCommand), wrong
//     argument counts, malformed flags, numbers, durations, node names and
//     read modes (ErrUsage, or cluster.ErrBadMode for --mode). Every error it
//     returns is a *ParseError carrying the command's name.
//   - Exec resolves what depends on the cluster at the time it runs: "leader"
//     and "paused" as node names, node numbers out of range
//     (cluster.ErrUnknownNode), partition specs. Its errors are the cluster's
//     own (no quorum, node down, …), unwrapped where the shell printed them
//     unwrapped, so the text a user sees is unchanged.
//   - Every Result renders as text (WriteText: what the shell prints, one or
//     more lines) and as JSON. Output's JSON is one object with the fields
//     "cmd", "ok", "error" (if any) and the result's own fields; the field
//     names are a stable contract.
//
// What is not: the text of results that report time (latencies, "after
// 12ms") varies from run to run, as does anything that depends on which node
// won an election. A Session is not safe for concurrent use; run one command
// at a time (the lab's cluster itself is safe to share between sessions).
// "load R" starts a background write load (64 clients, open loop) that
// outlives the command: it runs until "load off" or Session.Close, and
// Session.Load reads its figures from any goroutine.
// The "exit" command is recognised by Parse (Command.Exit) but Exec does
// nothing with it: ending the loop is the caller's business.
package labcmd
