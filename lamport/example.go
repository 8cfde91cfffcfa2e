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
