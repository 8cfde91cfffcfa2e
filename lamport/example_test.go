package lamport_test

import (
	"fmt"
	"strings"

	"github.com/coordkit/coordkit/lamport"
)

// The textbook example: A's counter reaches 2 and travels to B, whose
// counter is 1; B takes the maximum and adds one.
func ExampleClock() {
	var a, b lamport.Clock // zero values are ready
	a.Tick()               // (1,A)
	msg := a.Send()        // (2,A), the message carries 2
	b.Tick()               // (1,B)
	got := b.Receive(msg)  // max(1,2)+1
	fmt.Println(lamport.Timestamp{Counter: got, Node: "B"})
	// Output: (3,B)
}

func ExampleVector_Compare() {
	a := lamport.Vector{}.Increment("A")                // {A:1}
	b := lamport.Vector{}.Increment("B")                // {B:1}
	recv := b.Merge(a.Increment("A")).Increment("B")    // B receives A's second event
	fmt.Println(a.Compare(b), a.Compare(recv), recv, a) // a is unchanged
	// Output: concurrent before {A:2,B:2} {A:1}
}

func ExampleParseTrace() {
	tr, err := lamport.ParseTrace(strings.NewReader(lamport.ExampleScript))
	if err != nil {
		panic(err)
	}
	for _, e := range tr.Events {
		fmt.Println(e.Step, e.Timestamp, e.Vector)
	}
	for _, p := range tr.Concurrent {
		fmt.Println("concurrent:", tr.Events[p.First].Timestamp, tr.Events[p.Second].Timestamp)
	}
	// Output:
	// A local (1,A) {A:1}
	// B local (1,B) {B:1}
	// A send B (2,A) {A:2}
	// B recv A (3,B) {A:2,B:2}
	// concurrent: (1,A) (1,B)
	// concurrent: (1,B) (2,A)
}
