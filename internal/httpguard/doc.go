// Package httpguard is the one check coordctl's local HTTP servers (the
// lab's page, the sidecar's API) apply before a request may act: who may
// call, and how a request that changes state must be sent.
//
// The threat is a web page in a browser on the same machine (or, for a
// server on a non-loopback address, anyone on the network). A page can
// make the browser send a request to 127.0.0.1 with its own Host header
// through DNS rebinding, and a cross-site form or no-cors fetch can POST
// with Content-Type text/plain, application/x-www-form-urlencoded or
// multipart/form-data without a CORS preflight. So:
//
//   - with a token configured, a guarded request must carry it
//     ("Authorization: Bearer TOKEN" or ?token=TOKEN), compared in constant
//     time; a token read from a file (ReadSecret) follows the file when it
//     is rotated, the previous token accepted for RotationGrace;
//   - without one, the request's Host must name a loopback host
//     (localhost or a loopback IP), which a rebound DNS name is not;
//   - a server on a non-loopback address must have a token (CheckListen);
//   - a request that changes state must say Content-Type: application/json,
//     which a browser sends cross-origin only after a preflight that these
//     servers never answer (JSONBody).
//
// It does not provide transport security: a token sent over plain HTTP on
// a network can be read there. Use it on loopback, inside a pod, or behind
// TLS.
package httpguard
