// Package httpserve runs coordctl's local HTTP servers (the lab's page,
// the sidecar's API, the agent's coordination API) and stops them
// promptly.
//
// net/http's Server.Shutdown waits for every connection to go idle and
// counts one that has not yet sent a request as busy for its first five
// seconds (golang/go#22682). Browsers open such connections ahead of need,
// and Go's own client dials a spare one when two requests race for a
// connection, so a server stopped after a busy page or two concurrent
// clients waited five seconds and reported its shutdown as failed. A
// connection that has sent no request has nothing to finish: Shutdown
// closes those at once, and any accepted while it runs.
//
// What Shutdown still waits for is a request in flight, until its ctx
// ends; what is left then is closed, and ctx's error returned. Streams
// that never end by themselves (Server-Sent Events) are the caller's to
// end first.
//
// A peer that vanishes (its machine dead, the network cut) sends no FIN,
// and its connection would stay open, with a hold streamed on it, until
// TCP gives up retransmitting, about 15 minutes. PeerTimeout (Linux's
// TCP_USER_TIMEOUT) ends it once what the server sent has gone
// unacknowledged that long: the agent and the sidecar give their --ttl.
package httpserve
