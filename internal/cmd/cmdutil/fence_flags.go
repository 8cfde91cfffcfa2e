package cmdutil

import (
	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/childproc"
)

// EnvScope is the scope a child of `coordctl lock`, `coordctl sem` or
// `coordctl sidecar` finds in its environment: COORD_FENCING_SCOPE (a
// semaphore's NAME#slot, or the lock's name), else the lock or election name.
func EnvScope(f *Factory) string {
	for _, k := range []string{childproc.EnvFencingScope, childproc.EnvLockName, "COORD_ELECTION"} {
		if s := f.Getenv(k); s != "" {
			return s
		}
	}
	return ""
}

// ParseTokenFlag parses --token; missing or malformed is a usage error.
func ParseTokenFlag(s string) (fencing.Token, error) {
	if s == "" {
		return 0, UsageErrorf("--token is required")
	}
	tok, err := fencing.ParseToken(s)
	if err != nil {
		return 0, UsageErrorf("invalid --token: %v", err)
	}
	return tok, nil
}

// CheckScopeFlag checks --scope: missing or invalid is a usage error.
func CheckScopeFlag(s string) error {
	if s == "" {
		return UsageErrorf("--scope is required (the lock or election name)")
	}
	if err := fencing.ValidateScope(s); err != nil {
		return UsageErrorf("invalid --scope: %v", err)
	}
	return nil
}
