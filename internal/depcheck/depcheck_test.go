package depcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/coordkit/coordkit"

func pkg(path string, imports ...string) Package {
	full := func(p string) string {
		if std, ok := strings.CutPrefix(p, "="); ok { // the standard library
			return std
		}
		if strings.Contains(p, ".") {
			return p
		}
		return module + "/" + p
	}
	p := Package{ImportPath: full(path)}
	for _, i := range imports {
		p.Imports = append(p.Imports, full(i))
		p.Deps = append(p.Deps, full(i))
	}
	return p
}

func TestCheckRules(t *testing.T) {
	for _, tc := range []struct {
		name string
		pkgs []Package
		want []string
	}{
		{"the arrow's own edges", []Package{
			pkg("cmd/coordctl", "internal/cli"),
			pkg("cmd/mkimage", "internal/image"),
			pkg("internal/cli", "scenarios", "internal/etcdembed", "lock", "session", "internal/buildinfo", "internal/httpguard"),
			pkg("internal/sidecar", "internal/buildinfo", "internal/httpguard", "election"),
			pkg("internal/labweb", "internal/httpguard", "cluster"),
			pkg("internal/etcdembed", "internal/faultproxy", "go.etcd.io/etcd/server/v3/embed"),
			pkg("scenarios", "claim", "cluster", "scenarios/report"),
			pkg("internal/sweep", "internal/bench", "scenarios/report"),
			pkg("lock", "fencing", "session", "go.etcd.io/etcd/client/v3"),
			pkg("fencing", "=net/http"),
		}, nil},
		{"the image builder is no library's dependency", []Package{pkg("fencing/sqlfence", "internal/image")}, []string{
			"fencing/sqlfence imports internal/image: a public package imports an internal one",
			"fencing/sqlfence imports internal/image: layer {session, fencing, chart} imports layer {scenarios, internal/*}, which is above it",
		}},
		{"an import upwards", []Package{pkg("lock", "internal/cli")}, []string{
			"lock imports internal/cli: a public package imports an internal one",
			"lock imports internal/cli: layer {lock, semaphore, election, claim, cluster, lamport} imports layer internal/cli, which is above it",
		}},
		{"session imports lock", []Package{pkg("session", "lock")}, []string{
			"session imports lock: layer {session, fencing, chart} imports layer {lock, semaphore, election, claim, cluster, lamport}, which is above it",
		}},
		{"a public package imports an internal one of its layer", []Package{pkg("scenarios", "internal/etcdembed")}, []string{
			"scenarios imports internal/etcdembed: a public package imports an internal one",
		}},
		// The advisory-lock scenario computes pglock's key itself: it may
		// not import the anchor.
		{"the scenarios import the PostgreSQL anchor", []Package{pkg("scenarios", "internal/pglock")}, []string{
			"scenarios imports internal/pglock: a public package imports an internal one",
		}},
		{"the bench and the check use the anchors", []Package{
			pkg("internal/bench/lockbench", "internal/pglock", "internal/redislock"),
			pkg("internal/safety", "internal/pglock", "internal/faultproxy"),
		}, nil},
		{"a leaf depends on etcd", []Package{pkg("lamport", "go.etcd.io/etcd/client/v3")}, []string{
			"lamport imports go.etcd.io/etcd/client/v3: a leaf (fencing, lamport, chart) depends on etcd",
		}},
		{"a leaf depends on the module", []Package{pkg("fencing", "session")}, []string{
			"fencing imports session: a leaf (fencing, lamport, chart) depends on this module",
		}},
		{"the primitives share internal/primitive", []Package{
			pkg("lock", "internal/primitive"), pkg("semaphore", "internal/primitive"), pkg("election", "internal/primitive"), pkg("claim", "internal/primitive"),
		}, nil},
		{"only the primitives may import internal/primitive", []Package{pkg("scenarios", "internal/primitive"), pkg("cluster", "internal/primitive")}, []string{
			"cluster imports internal/primitive: a public package imports an internal one",
			"scenarios imports internal/primitive: a public package imports an internal one",
		}},
		{"internal/primitive is below the primitives", []Package{pkg("internal/primitive", "lock")}, []string{
			"internal/primitive imports lock: layer internal/primitive imports layer {lock, semaphore, election, claim, cluster, lamport}, which is above it",
		}},
		{"a package in no layer", []Package{pkg("util")}, []string{
			"util: in no layer of the arrow; place it in depcheck.Arrow",
		}},
		{"longest prefix wins: internal/cli is above internal/*", []Package{pkg("internal/sidecar", "internal/cli")}, []string{
			"internal/sidecar imports internal/cli: layer {scenarios, internal/*} imports layer internal/cli, which is above it",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, v := range Check(module, Arrow(), Leaves(), tc.pkgs) {
				got = append(got, v.String())
			}
			require.Equal(t, tc.want, got)
		})
	}
}

// TestModuleFollowsTheArrow checks this module's packages (without their
// tests) against the arrow.
func TestModuleFollowsTheArrow(t *testing.T) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	require.NoError(t, err)
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,Deps", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list: %s", stderr.String())
	var pkgs []Package
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p Package
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(t, err)
		}
		pkgs = append(pkgs, p)
	}
	require.NotEmpty(t, pkgs)
	for _, v := range Check(module, Arrow(), Leaves(), pkgs) {
		t.Errorf("%s", v)
	}
}
