// Package buildinfo says which build of coordctl is running: the module
// version, the VCS revision and dirty flag, the Go version and the etcd
// client and server library versions, all read from the binary's build
// information (runtime/debug.ReadBuildInfo).
//
// It promises only what the Go toolchain recorded: a binary built with
// -buildvcs=false (or outside a repository) has no revision, and a `go run`
// or test binary reports the main module's version as "(devel)".
package buildinfo
