// Package demo plays out, against real parts (an embedded etcd, coordkit's
// lock, two real HTTP resources), the failure that fencing tokens exist for,
// and narrates it for `coordctl demo`.
package demo
