package claim

import (
	"context"
	"fmt"
	"time"
)

// Op is what a Result answers: Claim, Release or Get.
type Op string

const (
	OpClaim   Op = "claim"
	OpRelease Op = "release"
	OpGet     Op = "get"
)

// Report is a Result as `coordctl claim`, `claim release` and `claim get`
// print it: its JSON form is their stable contract (the lease in hex, as
// etcdctl prints lease IDs), String their text form.
type Report struct {
	Name        string `json:"name"`
	Owner       string `json:"owner"`
	Revision    int64  `json:"revision"`
	Claimed     *bool  `json:"claimed,omitempty"`  // claim: this call created the claim
	Yours       *bool  `json:"yours,omitempty"`    // claim: the owner is the one asked about
	Released    *bool  `json:"released,omitempty"` // release
	Key         string `json:"key"`
	Lease       string `json:"lease,omitempty"`
	TTLSeconds  int64  `json:"ttl_seconds,omitempty"`
	LeftSeconds *int64 `json:"left_seconds,omitempty"` // get, with a lease

	op Op
}

// Report returns r as the answer to op.
func (r Result) Report(op Op) Report {
	out := Report{Name: r.Name, Owner: r.Owner, Revision: int64(r.Revision), Key: r.Key, op: op}
	if r.Lease != 0 {
		out.Lease = fmt.Sprintf("%x", int64(r.Lease))
		out.TTLSeconds = int64(r.TTL / time.Second)
	}
	switch op {
	case OpClaim:
		out.Claimed, out.Yours = &r.Won, &r.Yours
		if !r.Won {
			out.TTLSeconds = 0 // the granted TTL of the holder's lease is not known here
		}
	case OpRelease:
		t := true
		out.Released = &t
		out.TTLSeconds = 0
	case OpGet:
		if r.Lease != 0 {
			left := int64(r.Left / time.Second)
			out.LeftSeconds = &left
		}
	}
	return out
}

// String is the report as one line of text.
func (o Report) String() string {
	var s string
	switch {
	case o.op == OpClaim && *o.Claimed:
		s = fmt.Sprintf("claimed %q for %s (revision %d)", o.Name, o.Owner, o.Revision)
		if o.Lease != "" {
			s += fmt.Sprintf("; on lease %s, expires in %ds unless the lease is renewed", o.Lease, o.TTLSeconds)
		}
	case o.op == OpClaim && *o.Yours:
		s = fmt.Sprintf("%q is already yours, %s (revision %d); nothing written", o.Name, o.Owner, o.Revision)
		if o.Lease != "" {
			s += fmt.Sprintf(", lease %s not renewed", o.Lease)
		}
	case o.op == OpClaim:
		s = fmt.Sprintf("%q is taken: owned by %s since revision %d", o.Name, o.Owner, o.Revision)
	case o.op == OpRelease:
		s = fmt.Sprintf("released %q (owner %s, revision %d)", o.Name, o.Owner, o.Revision)
	default:
		s = fmt.Sprintf("%q is owned by %s (revision %d)", o.Name, o.Owner, o.Revision)
		if o.Lease != "" && o.LeftSeconds != nil {
			s += fmt.Sprintf("; lease %s, %ds of %ds left", o.Lease, *o.LeftSeconds, o.TTLSeconds)
		}
	}
	return s
}

// Do runs op on name: Claim for OpClaim, Release for OpRelease, Get for
// OpGet (owner unused), with their errors; another op is ErrUnknownOp.
func Do(ctx context.Context, c Client, op Op, name, owner string, opts ...Option) (Result, error) {
	switch op {
	case OpClaim:
		return Claim(ctx, c, name, owner, opts...)
	case OpRelease:
		return Release(ctx, c, name, owner, opts...)
	case OpGet:
		return Get(ctx, c, name, opts...)
	}
	return Result{}, fmt.Errorf("%w %q", ErrUnknownOp, op)
}
