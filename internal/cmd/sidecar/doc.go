// Package sidecarcmd implements coordctl sidecar (run a command only while
// this candidate leads, with the leader's token in its environment) and
// sidecar resign.
//
// It is named sidecarcmd because it imports internal/sidecar, the sidecar
// itself; its directory is internal/cmd/sidecar.
package sidecarcmd
