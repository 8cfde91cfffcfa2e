package lamport

// ExampleScript is the textbook example: A does two operations, (1,A) and
// (2,A), the second being the send of its counter 2 to B. B has done one
// local operation, so its counter is 1; on receipt it takes the maximum and
// adds one: (3,B). B's local operation is concurrent with both of A's, yet
// Lamport order ranks it between them.
const ExampleScript = `# A does two operations; the second sends A's counter (2) to B.
# B did one local operation before the message arrives.
A local
B local
A send B
B recv A
`

// exampleIntro and exampleOutro frame ExampleScript's trace in a Report:
// the theory's reading of it.
const (
	exampleIntro = `The example from the theory: A does two operations, (1,A) and (2,A); the
second sends A's counter 2 to B. B has done one local operation, so its
counter is 1. On receipt B takes the maximum and adds one: max(1,2)+1 = 3,
and the receive is (3,B).

`
	exampleOutro = `
In words: B's local operation (1,B) is concurrent with both of A's
operations. No message connects them, so neither could have influenced the
other, yet the total order puts (1,B) between (1,A) and (2,A). Lamport order
is consistent with causality but does not reveal it. And each node acted on
its own events without knowing the other's timestamps: the order among them
is known only where the timestamps meet, after the fact. That is why it
cannot decide "is this name free now?". See 'coordctl claim'.
`
)
