// Package faultctl is the HTTP control API of a fault-injecting etcd
// cluster (internal/etcdembed.Cluster): stop and start members, isolate
// them, cut their clients off, delay their links, heal, and report status.
//
//	POST /v1/members/{n}/stop      stop member n (its data stays)
//	POST /v1/members/{n}/start     restart member n; waits up to 30s for it to serve
//	POST /v1/members/{n}/isolate   cut every peer link from and to member n
//	POST /v1/clients/{n}/blackhole blackhole the client link of member n
//	POST /v1/links/delay?from=N&to=M&ms=D   delay member N → member M (0 removes)
//	POST /v1/links/cut?from=N&to=M          drop everything N sends to M (one direction)
//	POST /v1/heal                  remove every link fault (stopped members stay stopped)
//	GET  /v1/status                members, leader, active faults
//
// Answers are JSON: the status after the change, or {"error": "..."} with
// 400 (bad parameters), 404 (no such member), 409 (already stopped/running)
// or 503 (the member did not become ready in time; it keeps trying).
//
// The API has no authentication: bind it to loopback. It does not check
// that a fault leaves the cluster usable; isolating two members of three is
// allowed and loses quorum, which is the point of some experiments.
package faultctl
