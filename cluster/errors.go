package cluster

import "errors"

// Errors of the lab. Operation errors wrap one of these; use errors.Is.
var (
	// ErrInvalidConfig: Config.Validate found a problem.
	ErrInvalidConfig = errors.New("cluster: invalid config")
	// ErrUnknownNode: a node number outside 1..N.
	ErrUnknownNode = errors.New("cluster: unknown node")
	// ErrNodeDown: the node is crashed; requests to it are refused.
	ErrNodeDown = errors.New("cluster: node down")
	// ErrNodeUp: Restart of a node that is running.
	ErrNodeUp = errors.New("cluster: node already running")
	// ErrNoLeader: the node asked does not know a leader.
	ErrNoLeader = errors.New("not leader, leader unknown")
	// ErrNotLeader: a request that needs the leader reached a node that is
	// not (or no longer) leader.
	ErrNotLeader = errors.New("not leader")
	// ErrNoQuorum: the leader could not reach a quorum in time.
	ErrNoQuorum = errors.New("no quorum")
	// ErrTimeout: the operation did not finish within the op timeout.
	ErrTimeout = errors.New("timed out")
	// ErrClosed: the cluster is closed.
	ErrClosed = errors.New("cluster: closed")
	// ErrBadMode: an unknown read mode.
	ErrBadMode = errors.New("cluster: unknown read mode")
)
