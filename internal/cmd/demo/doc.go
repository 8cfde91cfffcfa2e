// Package democmd implements coordctl demo: a guided tour of why a lock
// needs a fencing token and what consensus costs.
//
// It is named democmd, not demo, because it imports internal/demo, the
// tour itself; its directory is internal/cmd/demo.
package democmd
