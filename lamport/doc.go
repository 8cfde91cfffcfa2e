// Package lamport implements Lamport clocks, vector clocks and a small trace
// engine that applies both to a scripted message history.
//
// A Lamport clock gives every event a Timestamp such that if event a happened
// before event b (a → b: a precedes b on one node, or a is the send of a
// message that b receives, or a chain of those), then a's timestamp is less
// than b's. Ordering timestamps by counter and then by node id makes that a
// total order, the same at every node that sees the same timestamps.
//
// What it does not promise: the converse. a < b in Lamport order does not mean
// that a happened before b; a and b may be concurrent, and the total order
// then picks one arbitrarily (by node id, or by whose counter happened to be
// ahead). Vector clocks recover the partial order exactly: Compare says
// Before, After, Equal or Concurrent.
//
// Nor can a Lamport order decide anything on the spot. The order between two
// events is known only once both timestamps have met in one place, which is
// after each node has already acted on its own event. "Is this name free right
// now?" therefore cannot be answered with Lamport clocks: two nodes that each
// grant the name will both have said yes before either timestamp reaches the
// other. Uniqueness needs consensus (see coordctl claim, one compare-and-set
// in etcd).
//
// The package is pure: no I/O beyond the io.Reader that ParseTrace reads and
// the io.Writer that Trace.WriteText writes, no time, no goroutines. Clock is safe for concurrent use and ready at its zero
// value; Vector is an immutable value, so copies never alias.
package lamport
