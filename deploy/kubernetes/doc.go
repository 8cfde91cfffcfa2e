// Package kubernetes holds coordctl's Kubernetes manifests (sidecar.yaml
// and sidecar-native.yaml: an application with the leader-election
// sidecar, as an ordinary container and as a native sidecar, each with its
// PodDisruptionBudget and Service; etcd.yaml: a three-member etcd
// StatefulSet with TLS from a Secret, history compaction, a quota, one
// member per node, limits, full DNS names, --initial-cluster-state from a
// ConfigMap, and a snapshot CronJob) and, in its tests, the check that
// they decode strictly into the Kubernetes API types and agree with
// coordctl and with docs/operations.md: probe paths and ports, the shared
// token volume, the security context, labels and selectors, each of etcd's
// upkeep properties; and, for both sidecar forms, that they fail the way
// their users choose (no probe that restarts or unroutes depends on etcd,
// spread, limits, a coordinated policy, a preStop handover). It has no
// code of its own.
package kubernetes
