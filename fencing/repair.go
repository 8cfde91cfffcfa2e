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
// re-fences so that none goes down.
type RepairPlan struct {
	// Path is the log; Size its length in bytes.
	Path string `json:"path"`
	Size int64  `json:"size"`
	// Keep is the length of the intact prefix that is kept.
	Keep int64 `json:"keep"`
	// Dropped lists every record from the first damaged one to the end.
	Dropped []DroppedRecord `json:"dropped"`
	// Refence lists, per scope, the highest token that a dropped record
	// claims above the floor the kept prefix leaves; Repair appends a fence
	// record for each, so a floor never goes down (a claim read from a
	// damaged record may be wrong, but a floor too high refuses old tokens,
	// it does not admit them).
	Refence []Admission `json:"refence"`
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
	// Type, Scope and Token are what could be read; from a damaged record
	// they are not verified.
	Type  string `json:"type,omitempty"`
	Scope string `json:"scope,omitempty"`
	Token Token  `json:"token,omitempty"`
}

// Repair examines the log of the Resource in dataDir, which no process may
// have open (ErrDirInUse otherwise), and says what it would drop: the first
// damaged record (a *CorruptError at open) and every record after it, since a
// write's sequence number depends on the ones before. With apply it then
// copies the log to resource.log.before-repair, rewrites it as the kept prefix
// followed by the fence records of plan.Refence, durably, and sets Applied.
// A log with no damage (a torn tail is not damage: open cuts it) is left as
// it is and the plan drops nothing.
func Repair(dataDir string, apply bool) (RepairPlan, error) {
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
	claims := map[string]Token{}
	for _, d := range plan.Dropped {
		if ValidateScope(d.Scope) != nil || !d.Token.Valid() || d.Type == "reject" {
			continue
		}
		if d.Token > scratch.guard.Floor(d.Scope) && d.Token > claims[d.Scope] {
			claims[d.Scope] = d.Token
		}
	}
	for scope, tok := range claims {
		plan.Refence = append(plan.Refence, Admission{Scope: scope, Token: tok, Floor: scratch.guard.Floor(scope)})
	}
	sort.Slice(plan.Refence, func(i, j int) bool { return plan.Refence[i].Scope < plan.Refence[j].Scope })
	if !apply {
		return plan, nil
	}
	plan.Backup = path + ".before-repair"
	if err := writeFileDurable(plan.Backup, data); err != nil {
		return plan, fmt.Errorf("fencing: repair: back up %s: %w", path, err)
	}
	buf := append([]byte(nil), data[:good]...)
	now := time.Now().UTC()
	for _, a := range plan.Refence {
		p, err := json.Marshal(resourceRecord{Type: "fence", Token: a.Token, Scope: a.Scope, Time: now})
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
		if d.Damaged == "" && crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(rest[4:8]) {
			d.Damaged = "checksum mismatch in a full-length record"
		}
		var desc CorruptError
		desc.describe(payload)
		d.Type, d.Scope, d.Token = desc.Type, desc.Scope, desc.Token
		out = append(out, d)
		off += d.Size
	}
	return out
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
