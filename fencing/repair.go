package fencing

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// RepairPlan says what Repair drops from a Resource's log and which floors it
// raises so that none goes down.
type RepairPlan struct {
	// Path is the log; Size its length in bytes.
	Path string `json:"path"`
	Size int64  `json:"size"`
	// Keep is the length of the intact prefix that is kept.
	Keep int64 `json:"keep"`
	// Dropped lists every record from the first damaged one to the end.
	Dropped []DroppedRecord `json:"dropped"`
	// Refence lists, per scope, the highest token that a trusted dropped
	// record claims above the floor the kept prefix and Bound leave (Scope
	// "" for a dropped floor of every scope); Repair appends a fence record
	// for each.
	Refence []Admission `json:"refence"`
	// HighestKept is the highest floor the kept records and the trusted
	// dropped ones hold (the floor of every scope included), HighestScope
	// its scope ("" for the floor of every scope). A bound must not be
	// below it.
	HighestKept  Token  `json:"highest_kept"`
	HighestScope string `json:"highest_scope"`
	// NeedsBound is true when a dropped record cannot be trusted (its
	// checksum fails, or it does not decode: its scope and token may be
	// anything), so that only a bound keeps every floor from going down.
	NeedsBound bool `json:"needs_bound"`
	// Bound is RepairOptions.Bound: the floor of every scope, named in the
	// log or not, after the repair; 0 for none.
	Bound Token `json:"bound,omitempty"`
	// Backup is the copy of the whole log made before a repair was applied.
	Backup string `json:"backup,omitempty"`
	// Applied is true once the log was rewritten.
	Applied bool `json:"applied"`
}

// NeedsRepair reports whether the log has a damaged record to drop.
func (p RepairPlan) NeedsRepair() bool { return len(p.Dropped) > 0 }

// DroppedRecord is one record Repair drops.
type DroppedRecord struct {
	Offset int64 `json:"offset"`
	// Size is the frame's length in bytes; the rest of the file when the
	// record's length cannot be read.
	Size int64 `json:"size"`
	// Damaged says why the record is damaged; empty for an intact record
	// dropped because it follows the damage.
	Damaged string `json:"damaged,omitempty"`
	// Trusted is true when the record's checksum matches and its type,
	// scope and token decode: they are what was written. Type, Scope and
	// Token of an untrusted record are what could be read, perhaps nothing;
	// none of them is evidence.
	Trusted bool   `json:"trusted"`
	Type    string `json:"type,omitempty"`
	Scope   string `json:"scope,omitempty"`
	Token   Token  `json:"token,omitempty"`
}

// RepairOptions says what Repair may do.
type RepairOptions struct {
	// Apply rewrites the log; without it Repair only plans.
	Apply bool
	// Bound is a token that no granted token exceeds: the current revision
	// of the etcd that grants the tokens (every token is one of its
	// revisions), or an operator's. With a bound the repair raises the floor
	// of every scope, named in the log or not, to it, so whatever scope and
	// token a damaged record held, its floor does not go down. 0 is no
	// bound: then a repair that drops an untrusted record is refused.
	Bound Token
}

// Repair examines the log of the Resource in dataDir, which no process may
// have open (ErrDirInUse otherwise), and says what it would drop: the first
// damaged record (a *CorruptError at open) and every record after it, since a
// write's sequence number depends on the ones before.
//
// With opts.Apply it then copies the log to resource.log.before-repair and
// rewrites it, durably, as the kept prefix, a floor of every scope at
// opts.Bound (if any) and a fence for each entry of plan.Refence, and sets
// Applied. A log with no damage (a torn tail is not damage: open cuts it) is
// left as it is and the plan drops nothing.
//
// Errors: ErrRepairNeedsBound when opts.Apply is set without a bound and a
// dropped record cannot be trusted; ErrBoundBelowFloor when opts.Bound is
// below a floor the log holds (it cannot then be a bound on granted tokens).
// Both leave the log unchanged and come with the plan.
func Repair(dataDir string, opts RepairOptions) (RepairPlan, error) {
	path := filepath.Join(dataDir, resourceLogName)
	plan := RepairPlan{Path: path}
	if _, err := os.Stat(path); err != nil {
		return plan, fmt.Errorf("fencing: repair: %w", err)
	}
	lock, err := lockFile(filepath.Join(dataDir, resourceLockName))
	if err != nil {
		return plan, err
	}
	defer lock.release()
	data, err := os.ReadFile(path)
	if err != nil {
		return plan, fmt.Errorf("fencing: repair: %w", err)
	}
	plan.Size = int64(len(data))
	scratch := &Resource{kv: map[string]Entry{}, idem: map[string]idemRecord{}, rejected: map[string]int{}}
	good, err := replayFrames(data, scratch.replay)
	var ce *CorruptError
	if err != nil && !errors.As(err, &ce) {
		return plan, err
	}
	plan.Keep = good
	if ce == nil {
		return plan, nil
	}
	plan.Dropped = scanDropped(data, ce)
	planFloors(&plan, &scratch.guard, opts.Bound)
	plan.Bound = opts.Bound
	switch {
	case opts.Bound > 0 && opts.Bound < plan.HighestKept:
		return plan, fmt.Errorf("%w: bound %d is below the floor %d of %s, so it is no bound on the tokens etcd granted "+
			"(was etcd restored, or the floor fenced by hand?); give a bound at or above %d",
			ErrBoundBelowFloor, opts.Bound, plan.HighestKept, scopeName(plan.HighestScope), plan.HighestKept)
	case opts.Apply && plan.NeedsBound && opts.Bound == 0:
		return plan, fmt.Errorf("%w: a dropped record cannot be trusted (%s), so the scope and token it held are unknown",
			ErrRepairNeedsBound, plan.Dropped[0].Damaged)
	case !opts.Apply:
		return plan, nil
	}
	plan.Backup = path + ".before-repair"
	if err := writeFileDurable(plan.Backup, data); err != nil {
		return plan, fmt.Errorf("fencing: repair: back up %s: %w", path, err)
	}
	buf := append([]byte(nil), data[:good]...)
	now := time.Now().UTC()
	var recs []resourceRecord
	if opts.Bound > scratch.guard.FloorAll() {
		recs = append(recs, resourceRecord{Type: recordFenceAll, Token: opts.Bound, Time: now})
	}
	for _, a := range plan.Refence {
		typ := recordFence
		if a.Scope == "" {
			typ = recordFenceAll
		}
		recs = append(recs, resourceRecord{Type: typ, Token: a.Token, Scope: a.Scope, Time: now})
	}
	for _, rec := range recs {
		p, err := json.Marshal(rec)
		if err != nil {
			return plan, err
		}
		buf = appendFrame(buf, p)
	}
	if err := writeFileDurable(path, buf); err != nil {
		return plan, fmt.Errorf("fencing: repair: %w", err)
	}
	plan.Applied = true
	return plan, nil
}

// planFloors fills plan's Refence, HighestKept, HighestScope and NeedsBound
// from its Dropped records and the floors of the kept prefix in kept.
func planFloors(plan *RepairPlan, kept *Guard, bound Token) {
	floors := kept.Floors()
	all := kept.FloorAll()
	plan.Refence = []Admission{} // [] in JSON, not null
	claims := map[string]Token{} // "" is the floor of every scope
	for _, d := range plan.Dropped {
		if !d.Trusted {
			plan.NeedsBound = true
			continue
		}
		if d.Type == recordReject {
			continue // a rejection raises no floor
		}
		claims[d.Scope] = max(claims[d.Scope], d.Token)
	}
	plan.HighestScope, plan.HighestKept = Highest(floors)
	if all > plan.HighestKept {
		plan.HighestScope, plan.HighestKept = "", all
	}
	for scope, tok := range claims {
		if tok > plan.HighestKept || (tok == plan.HighestKept && scope < plan.HighestScope) {
			plan.HighestScope, plan.HighestKept = scope, tok
		}
		floor := max(floors[scope], all, bound)
		if scope == "" {
			floor = max(all, bound)
		}
		if tok > floor {
			plan.Refence = append(plan.Refence, Admission{Scope: scope, Token: tok, Floor: floor})
		}
	}
	sort.Slice(plan.Refence, func(i, j int) bool { return plan.Refence[i].Scope < plan.Refence[j].Scope })
}

// scopeName is how a message names scope: quoted, or "every scope" for "".
func scopeName(scope string) string {
	if scope == "" {
		return "every scope"
	}
	return fmt.Sprintf("scope %q", scope)
}

// scanDropped lists the records from the damaged one to the end of data.
func scanDropped(data []byte, ce *CorruptError) []DroppedRecord {
	var out []DroppedRecord
	off := ce.Offset
	first := true
	for off < int64(len(data)) {
		rest := data[off:]
		d := DroppedRecord{Offset: off, Size: int64(len(rest))}
		if first {
			d.Damaged = ce.Reason
		}
		first = false
		if len(rest) < frameHeaderSize || crc32.Checksum(rest[0:8], castagnoli) != binary.LittleEndian.Uint32(rest[8:12]) {
			if d.Damaged == "" {
				d.Damaged = "bad record header (length unreadable)"
			}
			out = append(out, d)
			break
		}
		n := int64(binary.LittleEndian.Uint32(rest[0:4]))
		if n > maxRecordSize || frameHeaderSize+n > int64(len(rest)) {
			if d.Damaged == "" {
				d.Damaged = "record length runs past the end of the file"
			}
			out = append(out, d)
			break
		}
		d.Size = frameHeaderSize + n
		payload := rest[frameHeaderSize:d.Size]
		sumOK := crc32.Checksum(payload, castagnoli) == binary.LittleEndian.Uint32(rest[4:8])
		if d.Damaged == "" && !sumOK {
			d.Damaged = "checksum mismatch in a full-length record"
		}
		var desc CorruptError
		desc.describe(payload)
		d.Type, d.Scope, d.Token = desc.Type, desc.Scope, desc.Token
		d.Trusted = sumOK && trustedRecord(payload)
		out = append(out, d)
		off += d.Size
	}
	return out
}

// trustedRecord reports whether a payload whose checksum matches decodes to
// a record whose type, scope and token are valid, so that the floor it
// claims is known.
func trustedRecord(payload []byte) bool {
	var rec resourceRecord
	if json.Unmarshal(payload, &rec) != nil {
		return false
	}
	switch rec.Type {
	case recordFenceAll:
		return checkAllArgs(rec.Scope, rec.Token) == nil
	case recordWrite, recordFence, recordReject:
		return checkArgs(rec.Scope, rec.Token) == nil
	}
	return false
}

// writeFileDurable replaces path with data atomically: a temporary file,
// fsync, rename, fsync of the directory.
func writeFileDurable(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(path))
}
