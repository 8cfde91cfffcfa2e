package safety

// OpKind is the kind of a client operation in a History.
type OpKind string

// Operation kinds.
const (
	OpAcquire OpKind = "acquire" // the lock (or leadership) was requested; Token set when granted
	OpFence   OpKind = "fence"   // POST /v1/fence with the holder's token
	OpRead    OpKind = "read"    // GET of the counter; Value is what was read
	OpWrite   OpKind = "write"   // PUT of the counter; Value is what was written
	OpRelease OpKind = "release" // Unlock (or resign)
)

// Outcome is how an operation ended as its client saw it.
type Outcome string

// Outcomes.
const (
	OK      Outcome = "ok"      // succeeded
	Fail    Outcome = "fail"    // certainly had no effect (refused before it was sent, or answered with an error)
	Unknown Outcome = "unknown" // may or may not have taken effect (timeout, connection lost)
	Stale   Outcome = "stale"   // rejected by the resource as stale (409); no effect
	// Conflict: refused by an If-Match precondition (412), because the
	// counter changed since the writer read it; no effect.
	Conflict Outcome = "conflict"
)

// Op is one client operation with its call and return times (nanoseconds
// since the start of the run, from one monotonic clock). Return is 0 when
// the outcome is Unknown and the client never learned it.
type Op struct {
	Client int    `json:"client"`
	Kind   OpKind `json:"kind"`
	Token  uint64 `json:"token,omitempty"`
	Value  int    `json:"value,omitempty"`
	ID     string `json:"id,omitempty"` // unique id of a write, also stored in the resource
	// Slot is the counter the op is about (a semaphore's slot; else 0).
	Slot int `json:"slot,omitempty"`
	// Reader marks the ops of a read holding of a read-write lock.
	Reader  bool    `json:"reader,omitempty"`
	Call    int64   `json:"call"`
	Return  int64   `json:"return"`
	Outcome Outcome `json:"outcome"`
}

// Write is a write the resource accepted, in the order it applied them.
type Write struct {
	Seq   uint64 `json:"seq"`
	Token uint64 `json:"token"`
	Value int    `json:"value"`
	ID    string `json:"id"`
	Slot  int    `json:"slot,omitempty"`
}

// History is everything a run recorded: the clients' operations and the
// resource's audit log of the counters (one per slot).
type History struct {
	// Fenced is true when the resource checked tokens.
	Fenced bool `json:"fenced"`
	// IfMatch is true when each write was conditional on the version its
	// writer read (ModeIfMatch): stale tokens are then not the resource's
	// business, lost updates still are.
	IfMatch bool `json:"if_match,omitempty"`
	// Limit is how many holders the lock admits at once (a semaphore's
	// limit; 1 for a mutex); 0 leaves the check of MaxHolders out.
	Limit int `json:"limit,omitempty"`
	// Ops are the clients' operations in any order.
	Ops []Op `json:"ops"`
	// Writes are the resource's accepted writes of the counter, by Seq.
	Writes []Write `json:"writes"`
	// Rejected is the resource's count of requests it rejected as stale.
	Rejected int `json:"rejected"`
	// End is the time the last operation returned; unknown outcomes are
	// taken to have returned by then.
	End int64 `json:"end"`
}
