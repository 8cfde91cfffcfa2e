// Package kubernetes holds coordctl's Kubernetes manifests (sidecar.yaml:
// an application with the leader-election sidecar, its
// PodDisruptionBudget and Service; etcd.yaml: a three-member etcd
// StatefulSet with TLS from a Secret, history compaction, a quota, one
// member per node, limits, full DNS names, --initial-cluster-state from a
// ConfigMap, and a snapshot CronJob) and, in its test, the check that
// they decode strictly into the Kubernetes API types and agree with
// coordctl and with docs/operations.md: probe paths and ports, the shared
// token volume, the security context, labels and selectors, and each of
// etcd's upkeep properties. It has no code of its own.
package kubernetes
