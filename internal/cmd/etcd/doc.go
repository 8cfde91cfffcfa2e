// Package etcdcmd implements coordctl etcd: an embedded single-member etcd
// in the foreground.
//
// It is named etcdcmd, not etcd, like its siblings named after what they
// wrap, so that it does not read as one of etcd's own packages; its
// directory is internal/cmd/etcd.
package etcdcmd
