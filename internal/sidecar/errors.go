package sidecar

import "errors"

// Errors of the sidecar.
var (
	// ErrNotLeader is returned by Resign when this instance does not lead.
	ErrNotLeader = errors.New("sidecar: not the leader")
	// ErrBadConfig is wrapped by New's errors for an invalid Config.
	ErrBadConfig = errors.New("sidecar: invalid configuration")
)
