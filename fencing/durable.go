package fencing

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"
)

// DurableGuard is a Guard whose floors survive a restart. Every admission
// that raises a floor is appended to a log file and fsynced before Admit
// returns, so a token a caller was told is admitted stays admitted, and a
// restart does not reopen the window for an older token.
//
// The log is append-only; a torn final record (a crash mid-append, its
// length running past the end of the file) is cut off at open, any other
// damaged record is a *CorruptError (ErrCorrupt). The file is
// locked (flock) while open: one process at a time. DurableGuard is safe for
// concurrent use; admissions are serialized, one fsync at a time.
type DurableGuard struct {
	mu    sync.Mutex
	guard Guard
	log   *logFile
	lock  *fileLock
	path  string
}

// floorRecord is one record of a DurableGuard's log: a scope's floor, or
// with All the floor of every scope (Guard.RaiseAll; Scope is empty, which
// no scope can be, so a binary that predates All refuses the log as corrupt
// instead of ignoring the record).
type floorRecord struct {
	Scope string `json:"scope"`
	Token Token  `json:"token"`
	All   bool   `json:"all,omitempty"`
}

// compactAbove is the number of log records per scope above which
// OpenDurableGuard rewrites the log to one record per scope.
const compactAbove = 64

// OpenDurableGuard opens (creating it if needed) the floor log at path and
// replays it. It returns an error wrapping ErrCorrupt for a damaged log and
// ErrDirInUse if another process has it open. The directory must exist.
func OpenDurableGuard(path string) (*DurableGuard, error) {
	lock, err := lockFile(path + ".lock")
	if err != nil {
		return nil, err
	}
	d := &DurableGuard{lock: lock, path: path}
	if err := d.open(); err != nil {
		lock.release()
		return nil, err
	}
	return d, nil
}

func (d *DurableGuard) open() error {
	replay := func(p []byte) error {
		var r floorRecord
		if err := json.Unmarshal(p, &r); err != nil {
			return err
		}
		if r.All {
			if err := checkAllArgs(r.Scope, r.Token); err != nil {
				return err
			}
			d.guard.RaiseAll(r.Token)
			return nil
		}
		if err := checkArgs(r.Scope, r.Token); err != nil {
			return err
		}
		d.guard.Apply(Admission{Scope: r.Scope, Token: r.Token})
		return nil
	}
	l, info, err := openLog(d.path, replay)
	if err != nil {
		return err
	}
	floors := d.guard.Floors()
	all := d.guard.FloorAll()
	if info.Records <= compactAbove*(len(floors)+1) {
		d.log = l
		return nil
	}
	// Compact: one record per scope. The floors are already durable in the
	// old log; the rename makes the new one take its place atomically.
	l.close()
	scopes := make([]string, 0, len(floors))
	for s := range floors {
		scopes = append(scopes, s)
	}
	sort.Strings(scopes)
	payloads := make([][]byte, 0, len(scopes)+1)
	if all > 0 {
		p, err := json.Marshal(floorRecord{Token: all, All: true})
		if err != nil {
			return err
		}
		payloads = append(payloads, p)
	}
	for _, s := range scopes {
		p, err := json.Marshal(floorRecord{Scope: s, Token: floors[s]})
		if err != nil {
			return err
		}
		payloads = append(payloads, p)
	}
	if err := rewriteLog(d.path, payloads); err != nil {
		return err
	}
	d.guard = Guard{}
	l, _, err = openLog(d.path, replay)
	if err != nil {
		return err
	}
	d.log = l
	return nil
}

// Admit admits token t in scope as Guard.Admit does and, when it raises the
// floor, makes the new floor durable (write and fsync) before raising it in
// memory and returning. A token equal to the floor is admitted without I/O.
// Besides the Guard's errors it returns an error wrapping ErrClosed after
// Close or after a failed write or fsync (the guard then admits nothing more;
// reopen it).
func (d *DurableGuard) Admit(scope string, t Token) (Admission, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.log == nil {
		return Admission{}, ErrClosed
	}
	return d.guard.AdmitFunc(scope, t, func(a Admission) error {
		if !a.Raises() {
			return nil
		}
		p, err := json.Marshal(floorRecord{Scope: a.Scope, Token: a.Token})
		if err != nil {
			return err
		}
		if err := d.log.append(true, p); err != nil {
			return fmt.Errorf("persist floor of %q: %w", a.Scope, err)
		}
		return nil
	})
}

// RaiseAll raises the floor of every scope, named or not, to t (see
// Guard.RaiseAll), durably: the record is fsynced before the floor is raised
// in memory. It returns an error wrapping ErrInvalidToken for an invalid t
// and ErrClosed as Admit does.
func (d *DurableGuard) RaiseAll(t Token) error {
	if err := checkAllArgs("", t); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.log == nil {
		return ErrClosed
	}
	if t <= d.guard.FloorAll() {
		return nil
	}
	p, err := json.Marshal(floorRecord{Token: t, All: true})
	if err != nil {
		return err
	}
	if err := d.log.append(true, p); err != nil {
		return fmt.Errorf("persist the floor of every scope: %w", err)
	}
	d.guard.RaiseAll(t)
	return nil
}

// FloorAll returns the floor of every scope set by RaiseAll (0 if none).
func (d *DurableGuard) FloorAll() Token { return d.guard.FloorAll() }

// Check computes the admission of t in scope without applying or persisting it.
func (d *DurableGuard) Check(scope string, t Token) (Admission, error) {
	return d.guard.Check(scope, t)
}

// Floor returns the floor of scope (0 if it has admitted nothing).
func (d *DurableGuard) Floor(scope string) Token { return d.guard.Floor(scope) }

// Floors returns a copy of every floor by scope.
func (d *DurableGuard) Floors() map[string]Token { return d.guard.Floors() }

// Close closes the log and releases its lock. Every admitted floor is
// already durable; Close adds nothing to the file.
func (d *DurableGuard) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.log == nil {
		return nil
	}
	err := d.log.close()
	d.log = nil
	if lerr := d.lock.release(); err == nil {
		err = lerr
	}
	return err
}
