// Package agentcmd implements coordctl agent: the coordination API
// (internal/coordapi) on one HTTP listener and one etcd session, for
// programs in any language (clients/python, clients/node, curl).
//
// It is named agentcmd after its command; its directory is
// internal/cmd/agent.
package agentcmd
