// Package etcdcmd implements coordctl etcd: an embedded single-member etcd
// in the foreground.
//
// It is named etcdcmd, not etcd, so as not to read as etcd's own client
// packages beside the internal/etcdembed it imports; its directory is
// internal/cmd/etcd.
package etcdcmd
