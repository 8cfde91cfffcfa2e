// Package labweb serves the Raft lab as a live web page: the same
// cluster/labcmd session the shell drives, observed and controlled over
// HTTP by a self-contained page (embedded HTML, plain JavaScript and SVG;
// no CDN, no build step, no request beyond this server).
//
// A Lab runs command lines from any front end (the shell, a script, the
// page) one at a time on one labcmd.Session and publishes each, with its
// result, to a Hub. It observes the cluster by polling cluster.Status and
// the links every PollInterval (50ms) and right after each command, and
// publishes a snapshot only when something changed; the write load's
// figures are published every LoadInterval (250ms) while it runs. Nothing
// in the cluster is changed to observe it.
//
// The Hub keeps the last RingSize events (4096) in a Ring, a pure bounded
// buffer, and the State they add up to. A Server exposes it:
//
//	GET  /api/state        State as JSON
//	GET  /api/events       Server-Sent Events; id: is the sequence number
//	POST /api/command      {"line":"…"} → the shell's JSON result
//	GET  /api/export/NAME  a file a history or timeline command wrote
//
// What is guaranteed:
//   - A stream reader that reconnects with Last-Event-ID N gets every
//     event after N, in order, once — or, when the ring no longer holds
//     them all, a "state" event (id = the last event it includes) and
//     then every event after it. A new reader starts with a state event.
//     Readers never slow the lab: each reads the ring at its own pace and
//     one that falls behind by more than the ring gets a state event. A
//     Last-Event-ID this run never reached (a tab left open while the lab
//     restarted on the same address) also gets a state event; State.Run
//     names the run, so the page starts over when it changes.
//   - A command body is one JSON object of at most 64 KiB: a larger one
//     is answered 413 naming the limit, bytes after the object 400.
//   - A line that does not parse is answered 400 with the shell's error
//     and changes nothing; a command that ran and failed (no quorum) is
//     answered 200 with "ok":false, as the shell prints it.
//   - Without a token the server listens only on loopback addresses and
//     answers only requests whose Host is a loopback name; with one (at
//     least 16 bytes), every request must carry it. POST needs a JSON content type, which a form
//     on another site cannot send.
//
// What is not: the stream shows the cluster at the polling rate, so a
// change that comes and goes within one PollInterval (a leader elected
// and deposed within 50ms) can be missed by the page (never by the
// cluster's own timeline, which `timeline FILE` exports). Commands from
// different front ends are serialised, so a long one ("wait 10s") holds
// up the others. The page keeps the last five minutes of its timeline.
package labweb
