package fencing

import (
	"fmt"
	"io"
	"sort"
)

// The text forms of the resource's answers and of a repair plan, as
// 'coordctl resource' prints them without -w json: key=value lines, one per
// record, for people and for grep. The JSON of the same types is the stable
// contract; these lines are not meant to be parsed.

// WriteText writes "ok key=K seq=N version=V token=T scope=S".
func (r PutResult) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "ok key=%s seq=%d version=%d token=%d scope=%s\n", r.Key, r.Seq, r.Version, r.Token, r.Scope)
	return err
}

// WriteText writes the value alone and exactly, without a newline of its
// own, so that what a put wrote and a get reads are the same bytes.
func (e Entry) WriteText(w io.Writer) error {
	_, err := io.WriteString(w, e.Value)
	return err
}

// WriteText writes "ok scope=S floor=F".
func (r FenceResult) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "ok scope=%s floor=%d\n", r.Scope, r.Floor)
	return err
}

// WriteText writes one line per accepted write, in order, then
// "writes=N rejected=R".
func (r LogResult) WriteText(w io.Writer) error {
	for _, wr := range r.Writes {
		if _, err := fmt.Fprintf(w, "seq=%d scope=%s token=%d key=%s version=%d value=%q\n",
			wr.Seq, wr.Scope, wr.Token, wr.Key, wr.Version, wr.Value); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "writes=%d rejected=%d\n", len(r.Writes), r.Rejected)
	return err
}

// WriteText writes "scope=S floor=F" per scope in scope order, then
// "every-scope floor=F" if a repair set a floor for every scope, then
// "highest=N scope=S".
func (r FloorsResult) WriteText(w io.Writer) error {
	scopes := make([]string, 0, len(r.Floors))
	for s := range r.Floors {
		scopes = append(scopes, s)
	}
	sort.Strings(scopes)
	for _, s := range scopes {
		if _, err := fmt.Fprintf(w, "scope=%s floor=%d\n", s, r.Floors[s]); err != nil {
			return err
		}
	}
	if r.All > 0 {
		if _, err := fmt.Fprintf(w, "every-scope floor=%d\n", r.All); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "highest=%d scope=%s\n", r.Highest, r.HighestScope)
	return err
}

// WriteText says what the plan drops and which floors it raises, whether
// it needs a bound and, once applied, where the old log is.
func (p RepairPlan) WriteText(w io.Writer) error {
	if !p.NeedsRepair() {
		_, err := fmt.Fprintf(w, "ok log=%s: no damaged record, nothing to drop\n", p.Path)
		return err
	}
	fmt.Fprintf(w, "log %s: %d bytes; keeping the first %d, dropping %d record(s):\n", p.Path, p.Size, p.Keep, len(p.Dropped))
	for _, d := range p.Dropped {
		state := "intact, after the damage"
		if d.Damaged != "" {
			state = "damaged: " + d.Damaged
		}
		if !d.Trusted {
			state += "; untrusted: its scope and token may be anything"
		}
		typ := d.Type
		if typ == "" {
			typ = "-"
		}
		fmt.Fprintf(w, "  offset=%d size=%d type=%s scope=%q token=%d (%s)\n", d.Offset, d.Size, typ, d.Scope, d.Token, state)
	}
	if p.Bound > 0 {
		fmt.Fprintf(w, "raise the floor of every scope, named in the log or not, to the bound %d, so that none goes down\n", p.Bound)
	}
	for _, a := range p.Refence {
		fmt.Fprintf(w, "re-fence %s token=%d (floor otherwise: %d), so that it does not go down\n", scopeField(a.Scope), a.Token, a.Floor)
	}
	if p.NeedsBound && p.Bound == 0 {
		fmt.Fprintf(w, "needs a bound: no granted token exceeds it, at or above the highest floor kept (%d)\n", p.HighestKept)
	}
	if !p.Applied {
		return nil
	}
	_, err := fmt.Fprintf(w, "repaired; the old log is in %s\n", p.Backup)
	return err
}

// scopeField is scope=%q, or "every-scope" for the floor of every scope.
func scopeField(scope string) string {
	if scope == "" {
		return "every-scope"
	}
	return fmt.Sprintf("scope=%q", scope)
}
