// Package claim claims unique names in etcd with one compare-and-set.
//
// A claim on name N is the key <prefix>/N (DefaultPrefix "coordkit/claims")
// whose value is the owner. Claim runs one etcd transaction:
//
//	If   CreateRevision(key) == 0         (nobody holds the name)
//	Then Put(key, owner [, lease])        (we do now)
//	Else Get(key)                         (who does)
//
// etcd serialises transactions through Raft, so of any number of concurrent
// claims exactly one sees the key absent and creates it; every other one sees
// that winner's key, in the same transaction, and learns the owner. That is
// the guarantee Lamport timestamps cannot give: there the order of two
// requests is known only after both nodes have answered.
//
// It sits beside lock and election: a lock is held by turns, an election
// hands out leadership by turns, a claim hands a name to one owner for good
// (or for a TTL). Client is the consumer-side interface it needs of etcd;
// *clientv3.Client satisfies it.
//
// What is guaranteed: at most one owner of a name at any revision; the
// winner's Revision (the key's create revision, a fencing.Token) is unique
// and grows with every new claim of any name, so it can be sent to a
// fencing.Guard like a lock's token.
//
// What is not:
//   - Owners are compared as strings. Two processes that claim with the same
//     owner string are one owner to this package: a re-claim by the current
//     owner succeeds without writing (Result.Won false, Result.Yours true).
//   - With a TTL the claim is put on a fresh lease that this package never
//     keeps alive: the claim disappears TTL after it was made unless the
//     caller renews the lease (clientv3.Lease.KeepAlive[Once] on
//     Result.Lease). A re-claim does not renew it. etcd raises a TTL below its
//     minimum (1.5 election timeouts rounded up, 2s with default timing) to
//     that minimum; Result.TTL is what etcd granted.
//   - Granting the lease is a request of its own before the transaction; a
//     losing claim revokes its unused lease (best effort: if that fails the
//     lease, holding no key, simply expires).
//   - Release deletes the key only (compare on the value, one transaction);
//     a lease it was attached to expires on its own.
package claim
