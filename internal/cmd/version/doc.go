// Package version implements coordctl version: coordctl's version, VCS
// revision, Go version and etcd library versions.
package version
