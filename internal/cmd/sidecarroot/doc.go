// Package sidecarroot is the command tree of coordkit-sidecar, the slim
// binary of the sidecar image: coordctl's tree pruned to `sidecar` (with
// `sidecar resign`) and `version`, the same commands, flags, output and
// exit codes, so a manifest's arguments work with either image.
//
// It links only what those commands need: etcd's client, not its server
// (no `coordctl etcd`, so no embedded etcd), and none of the lab
// (hashicorp/raft), the SQL drivers, Redis or the browser driver; a test
// checks the dependency set with `go list`. It promises nothing about
// coordctl's other commands: they are not there.
package sidecarroot
