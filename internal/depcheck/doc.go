// Package depcheck holds coordkit's dependency arrow as a table of layers
// and the pure check of a package graph against it; its test runs the check
// on `go list` of this module.
//
// The arrow (DESIGN.md, README "Layout and docs"):
//
//	cmd → internal/cmd → internal/cmd/cmdutil → {scenarios, internal/*} → {lock, semaphore, election, claim, cluster, lamport} → {session, fencing, chart}
//
// A package may import packages of its own layer or below, never above
// (and a command package under internal/cmd no other command package, only
// internal/cmd/cmdutil and below; internal/cmd/root assembles them); no
// public package imports an internal one; fencing, lamport and chart import
// nothing from this module and nothing from etcd, directly or not. Every
// package of the module must be in a layer, so a new package is placed
// deliberately. Test files are not checked: tests may import anything (an
// embedded etcd, say).
package depcheck
