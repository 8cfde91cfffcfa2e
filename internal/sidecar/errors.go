package sidecar

import "errors"

// Errors of the sidecar.
var (
	// ErrNotLeader is returned by Resign when this instance does not lead.
	ErrNotLeader = errors.New("sidecar: not the leader")
	// ErrBadConfig is wrapped by New's errors for an invalid Config.
	ErrBadConfig = errors.New("sidecar: invalid configuration")
	// ErrTokenFile is wrapped by CheckTokenFile's errors (and New's): the
	// token file could not be written.
	ErrTokenFile = errors.New("sidecar: cannot write token file")
	// ErrCommand is wrapped by CheckCommand's errors (and New's): the
	// command is not found or not executable.
	ErrCommand = errors.New("sidecar: cannot run command")
	// ErrConnecting is returned by the calls that need etcd (Candidates)
	// before Run has connected.
	ErrConnecting = errors.New("sidecar: not connected to etcd yet")
)
