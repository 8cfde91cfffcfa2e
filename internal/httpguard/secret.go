package httpguard

import (
	"crypto/subtle"
	"fmt"
	"os"
	"sync"
	"time"
)

// RotationGrace is how long a token file's previous token is still
// accepted after the file was seen to change: long enough for the clients
// that read the same secret to pick up the new one (a Kubernetes Secret
// reaches each pod's mounted volume within the kubelet's sync period and
// cache, about a minute each), short enough that a token rotated away
// because it leaked stops working soon after. A server restarted after the
// change accepts only the new token.
const RotationGrace = 2 * time.Minute

// A Secret is the token a guarded server requires: a fixed one, or one
// read from a file and read again whenever the file changes (ReadSecret),
// so that a rotated secret takes effect without a restart. A nil Secret,
// or one made from "", requires none. Safe for concurrent use.
type Secret struct {
	path   string // "" for a fixed token
	notify func(string)
	now    func() time.Time

	mu            sync.Mutex
	file          fileVersion
	current       string
	previous      string
	previousUntil time.Time
	failing       bool // the last read of the changed file failed (told once)
}

// NewSecret returns a Secret that requires token ("": none).
func NewSecret(token string) *Secret { return &Secret{current: token, now: time.Now} }

// ReadSecret reads the token of the file at path (as ReadTokenFile: an
// empty file is an error) and returns a Secret that requires it. Each
// check afterwards looks at the file (device and inode, size, modification
// time: one stat) and, when it changed — replaced in place, or a
// Kubernetes Secret volume's symlink swapped to a new version — reads it
// again: the new token is required from then on, and the previous one is
// still accepted for RotationGrace. A changed file that cannot be read or
// holds nothing keeps the last token in force until it can. notify, when
// not nil, is told each change in a sentence (for the server's log);
// it never sees a token.
func ReadSecret(path string, notify func(string)) (*Secret, error) {
	v, err := statVersion(path) // before the read: a change during it is seen by the next check
	if err != nil {
		return nil, err
	}
	tok, err := ReadTokenFile(path)
	if err != nil {
		return nil, err
	}
	return &Secret{path: path, notify: notify, now: time.Now, file: v, current: tok}, nil
}

// Required reports whether the Secret requires a token.
func (s *Secret) Required() bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current != ""
}

// Accepts reports whether got is the token in force (after reading the
// file again if it changed), or the previous one within RotationGrace of
// the change. Compared in constant time.
func (s *Secret) Accepts(got string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refresh()
	ok := subtle.ConstantTimeCompare([]byte(got), []byte(s.current)) == 1
	if s.previous != "" {
		if s.now().Before(s.previousUntil) {
			ok = subtle.ConstantTimeCompare([]byte(got), []byte(s.previous)) == 1 || ok
		} else {
			s.previous = ""
		}
	}
	return ok
}

// refresh reads the file again if it changed. Called with mu held.
func (s *Secret) refresh() {
	if s.path == "" {
		return
	}
	v, err := statVersion(s.path)
	if err == nil && v.same(s.file) {
		return // unchanged, or the same unusable version as last time
	}
	var tok string
	if err == nil {
		// The version is the one stat'ed before the read: a change during
		// the read is seen by the next check. An unusable one is not read
		// again until it changes.
		s.file = v
		tok, err = ReadTokenFile(s.path)
	}
	if err != nil {
		if !s.failing && s.notify != nil {
			s.notify(fmt.Sprintf("the token file %s changed but cannot be used (%v): its last token stays in force", s.path, err))
		}
		s.failing = true
		return
	}
	s.failing = false
	if tok == s.current {
		return // touched, or rewritten with the same token
	}
	s.previous, s.previousUntil = s.current, s.now().Add(RotationGrace)
	s.current = tok
	if s.notify != nil {
		s.notify(fmt.Sprintf("the token file %s holds a new token: it is required from now on; the previous one is accepted until %s",
			s.path, s.previousUntil.UTC().Format(time.RFC3339)))
	}
}

// fileVersion tells two versions of a file apart without reading it: the
// same file (device and inode, os.SameFile), size and modification time.
type fileVersion struct{ fi os.FileInfo }

func (v fileVersion) same(o fileVersion) bool {
	return v.fi != nil && o.fi != nil && os.SameFile(v.fi, o.fi) &&
		v.fi.Size() == o.fi.Size() && v.fi.ModTime().Equal(o.fi.ModTime())
}

func statVersion(path string) (fileVersion, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileVersion{}, err
	}
	return fileVersion{fi}, nil
}
