// Package kubernetes holds coordctl's Kubernetes manifests (sidecar.yaml:
// an application with the leader-election sidecar, its
// PodDisruptionBudget and Service; etcd.yaml: a three-member etcd
// StatefulSet with TLS from a Secret) and, in its test, the check that
// they decode strictly into the Kubernetes API types and agree with
// coordctl: probe paths and ports, the shared token volume, the security
// context, labels and selectors. It has no code of its own.
package kubernetes
