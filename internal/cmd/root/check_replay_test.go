package root

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
)

func TestCheckReplayUsage(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `{"check":"lock-safety","seed":3,"steps":[{"kind":"freeze-client","client":2,"hold":"3s","quiet":"1s","at":"2s"}]}`)
	election := write("election.json", `{"check":"election-safety","seed":3,"steps":[]}`)
	bad := write("bad.json", `{"steps":[{"kind":"meteor","hold":"1s","quiet":"1s"}]}`)
	tooMany := write("clients.json", `{"check":"lock-safety","steps":[{"kind":"freeze-client","client":9,"hold":"1s","quiet":"1s"}]}`)
	ctx := context.Background()
	for name, args := range map[string][]string{
		"schedule and seeds": {"--schedule", good, "--seeds", "1..2"},
		"shrink and seeds":   {"--shrink", "--seeds", "1..2"},
		"missing file":       {"--schedule", filepath.Join(dir, "none.json")},
		"bad file":           {"--schedule", bad},
		"other check":        {"--schedule", election},
		"client 9 of 5":      {"--schedule", tooMany},
		"shrink runs 0":      {"--shrink", "--shrink-runs", "0"},
		"redsync":            {"--shrink", "--lock", "redsync", "--redis", "127.0.0.1:1"},
	} {
		t.Run(name, func(t *testing.T) {
			r := runInProcess(ctx, nil, append([]string{"check", "lock-safety"}, args...)...)
			if r.Code != cmdutil.ExitUsage {
				t.Errorf("exit %d, want %d: %s", r.Code, cmdutil.ExitUsage, r.Stderr)
			}
		})
	}
}
