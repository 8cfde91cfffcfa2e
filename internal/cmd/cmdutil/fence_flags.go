package cmdutil

import (
	"github.com/coordkit/coordkit/fencing"
	"github.com/coordkit/coordkit/internal/childproc"
)

// EnvScope is the scope a child of `coordctl lock`, `sem`, `elect` or
// `sidecar` finds in its environment: COORD_FENCING_SCOPE, where its held
// key lives in etcd (PREFIX+NAME/ for a lock or an election,
// PREFIX+NAME/slots/I for a semaphore's slot). The lock's or election's
// name is not a scope: it leaves the prefix out.
func EnvScope(f *Factory) string { return f.Getenv(childproc.EnvFencingScope) }

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
		return UsageErrorf("--scope is required (a hold sets $%s: PREFIX+NAME/ for a lock or an election, PREFIX+NAME/slots/I for a semaphore's slot)", childproc.EnvFencingScope)
	}
	if err := fencing.ValidateScope(s); err != nil {
		return UsageErrorf("invalid --scope: %v", err)
	}
	return nil
}
