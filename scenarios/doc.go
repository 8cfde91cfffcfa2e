// Package scenarios turns the claims coordkit teaches into experiments that
// run in seconds and report what they observed next to what theory
// predicts: a verdict for each claim, the numbers, and a picture.
//
// A Registry holds scenarios by name; Default returns a new registry with
// every scenario coordkit ships. Each Scenario declares its claims once
// (Claim: an ID, a Kind, the text); its Run gets an Env (progress writer,
// seed, scale, temporary directory, logger, etcd endpoints or a starter)
// and returns a *report.Report with a verdict per claim, checked by ID.
// Registry.Run fills in the name, seed, scale, elapsed time and each
// verdict's text and kind, verifies that the run checked exactly the
// declared claims (*ClaimsError otherwise), and sets the verdict.
//
// Why public: the experiments are coordkit's evidence for what its docs
// claim, and another program (a CI job, a course's notebook, a web page)
// may run them and read their reports without coordctl. So the package
// imports only public packages (cluster, lock, election, claim, fencing,
// fencing/sqlfence, session, lamport, etcd's client and the SQL drivers
// pgx, go-sql-driver/mysql and modernc.org/sqlite) and nothing under
// internal/. It does not link an etcd server: the scenarios on etcd
// (lock-without-fencing, leader-failover, lamport-uniqueness, fenced-sql) use Env.EtcdEndpoints or call
// Env.StartEtcd, which coordctl fills from internal/etcdembed and the tests
// from internal/etcdembed/etcdtest; without either they fail with
// ErrNoEtcd. The lab scenarios need neither: they link the in-process Raft
// lab (package cluster, hashicorp/raft).
//
// The scenarios of Default:
//
//	stale-read            a read from a cut-off follower; porcupine's verdict; readindex
//	quorum-loss           3 nodes, 2 crashed: writes stop, stale reads go on, nothing acked is lost
//	minority-partition    5 nodes split 2|3: the minority refuses, the majority goes on
//	even-split            3|3 of 6 stops everything; (N-1)/2 failures tolerated, N = 1..7
//	two-dc                2+1 over two sites vs 2+2+1 with a witness
//	write-cost            write latency against delay, fsync and size; read cost by mode
//	read-ladder           every read mode under a partition and under a paused leader
//	lock-without-fencing  a frozen lock holder's late write, with and without the token
//	leader-failover       crash and graceful failover on etcd; tokens; the deposed leader fenced
//	lamport-uniqueness    Lamport order is known too late to hand out a name; etcd CAS is not
//	two-phase-commit      2PC blocks on its coordinator; a decision through consensus does not
//	lamport-clocks        the clock rules, causality, and what vector clocks add
//	fenced-sql            the frozen holder's late UPDATE in SQLite/PostgreSQL/MySQL, with and without the fence check
//	advisory-lock         a PostgreSQL advisory lock's cut connection: two holders, the lost update, the sequence token fenced
//
// What is guaranteed: every registered scenario states at least two claims
// (Register refuses fewer), each checked by the run (Registry.Run refuses a
// report that skips one), and a report passes only when every claim holds,
// timing claims included.
// A scenario that cannot run (etcd would not start, say) returns an error
// instead of a failing report, so "the theory did not hold" and "the
// experiment broke" stay distinct.
//
// What is not: scenarios measure real time on a shared machine, so the
// figures vary from run to run. Claims of Kind Timing (latency within a
// tolerance of a model, an upper bound on a failover) can miss on a loaded
// machine; claims of Kind Safety (no lost write, one winner, a stale read
// refused) are judged exactly and must hold anywhere. The tests require
// only the safety claims (SafetyFailed); `coordctl scenario run` reports
// both. The same seed replays the same fault schedule, not the same
// timings.
package scenarios
