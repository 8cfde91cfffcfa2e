package primitive

import (
	"strconv"
	"strings"
)

// The keys of the primitives under a name N, all below the prefix "N/":
//
//	Mutex, concurrency.Mutex, etcdctl lock, election candidates:  N/<lease hex>
//	RWMutex readers and writers:                N/read/<lease hex>, N/write/<lease hex>
//	semaphore:                                  N/limit, N/queue/<lease hex>-<handle hex>-<n>
//	                                            (or N/queue/<lease hex>, before), N/slots/<i>
//
// A primitive counts as its own only the keys of its layout (RoleOf):
// anything else under N/ — the keys of a lock named N/child, say — belongs
// to another name and neither holds nor blocks N.
const (
	ReaderInfix    = "read/"
	WriterInfix    = "write/"
	SemLimitSuffix = "limit"
	SemQueueInfix  = "queue/"
	SemSlotsInfix  = "slots/"
)

// KeyRole is what a key under a name's prefix is to the primitives of that
// name.
type KeyRole int

const (
	// RoleForeign: no primitive of this name wrote it (another name's key).
	RoleForeign KeyRole = iota
	// RoleExclusive: N/<lease hex>, a mutex holder or waiter, or a candidate.
	RoleExclusive
	// RoleReader: N/read/<lease hex>, an RWMutex reader.
	RoleReader
	// RoleWriter: N/write/<lease hex>, an RWMutex writer.
	RoleWriter
	// RoleSemLimit: N/limit, a semaphore's stored limit.
	RoleSemLimit
	// RoleSemQueue: N/queue/<lease hex>-<handle hex>-<n>, a semaphore's
	// waiter (N/queue/<lease hex> as the previous version wrote it).
	RoleSemQueue
	// RoleSemSlot: N/slots/<i>, a semaphore's slot.
	RoleSemSlot
)

// IsLock reports whether the role is one of a lock's (Mutex or RWMutex).
func (r KeyRole) IsLock() bool { return r == RoleExclusive || r == RoleReader || r == RoleWriter }

// IsSemaphore reports whether the role is one of a semaphore's.
func (r KeyRole) IsSemaphore() bool {
	return r == RoleSemLimit || r == RoleSemQueue || r == RoleSemSlot
}

// RoleOf tells what key, under the name prefix pfx ("N/"), is. Pure.
func RoleOf(pfx, key string) KeyRole {
	rest, ok := strings.CutPrefix(key, pfx)
	if !ok {
		return RoleForeign
	}
	switch {
	case isLeaseHex(rest):
		return RoleExclusive
	case rest == SemLimitSuffix:
		return RoleSemLimit
	}
	for infix, role := range map[string]KeyRole{ReaderInfix: RoleReader, WriterInfix: RoleWriter, SemQueueInfix: RoleSemQueue} {
		if id, ok := strings.CutPrefix(rest, infix); ok && isLeaseHex(id) {
			return role
		}
	}
	if id, ok := strings.CutPrefix(rest, SemQueueInfix); ok && isAcquisitionID(id) {
		return RoleSemQueue
	}
	if i, ok := strings.CutPrefix(rest, SemSlotsInfix); ok {
		if n, err := strconv.Atoi(i); err == nil && n >= 0 && strconv.Itoa(n) == i {
			return RoleSemSlot
		}
	}
	return RoleForeign
}

// isAcquisitionID reports whether s is a semaphore waiter's ID as this
// version writes it: <lease hex>-<handle hex>-<count>, one per acquisition
// (the previous version wrote <lease hex> alone, one per lease).
func isAcquisitionID(s string) bool {
	parts := strings.Split(s, "-")
	if len(parts) != 3 || !isLeaseHex(parts[0]) || !isLeaseHex(parts[1]) || parts[2] == "" {
		return false
	}
	for _, c := range parts[2] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// isLeaseHex reports whether s is a holder's ID as the layouts print it: %x
// of a lease ID, lowercase, as concurrency.Mutex writes it, or the decimal
// time etcd's recipes.RWMutex uses (up to 20 digits).
func isLeaseHex(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
