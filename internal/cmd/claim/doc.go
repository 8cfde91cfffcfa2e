// Package claimcmd implements coordctl claim: claim a unique name with one
// etcd compare-and-set, release it, and show who holds it.
//
// It is named claimcmd, not claim, because it imports the library package
// claim; its directory is internal/cmd/claim.
package claimcmd
