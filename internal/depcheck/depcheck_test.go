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
			pkg("cmd/coordctl", "internal/cmd/root"),
			pkg("internal/cmd/root", "internal/cmd/lock", "internal/cmd/sem", "internal/cmd/cmdutil", "fencing"),
			pkg("internal/cmd/lock", "internal/cmd/cmdutil", "lock", "internal/primitive"),
			pkg("internal/cmd/cmdutil", "internal/childproc", "internal/etcddial", "session"),
			pkg("cmd/mkimage", "internal/image"),
			pkg("internal/cmd/scenario", "scenarios", "internal/etcdembed", "lock", "session", "internal/buildinfo", "internal/httpguard"),
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
		{"an import upwards", []Package{pkg("lock", "internal/cmd/lock")}, []string{
			"lock imports internal/cmd/lock: a public package imports an internal one",
			"lock imports internal/cmd/lock: layer {lock, semaphore, election, claim, cluster, lamport} imports layer internal/cmd, which is above it",
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
		{"longest prefix wins: internal/cmd is above internal/*", []Package{pkg("internal/sidecar", "internal/cmd/sidecar")}, []string{
			"internal/sidecar imports internal/cmd/sidecar: layer {scenarios, internal/*} imports layer internal/cmd, which is above it",
		}},
		{"longest prefix wins: internal/cmd/cmdutil is below internal/cmd", []Package{
			pkg("internal/cmd/cmdutil", "internal/cmd/lock"),
			pkg("internal/childproc", "internal/cmd/cmdutil"),
		}, []string{
			"internal/childproc imports internal/cmd/cmdutil: layer {scenarios, internal/*} imports layer internal/cmd/cmdutil, which is above it",
			"internal/cmd/cmdutil imports internal/cmd/lock: layer internal/cmd/cmdutil imports layer internal/cmd, which is above it",
		}},
		{"a command package imports another", []Package{
			pkg("internal/cmd/sem", "internal/cmd/lock", "internal/cmd/cmdutil"),
			pkg("internal/cmd/lab", "internal/cmd/bench/sub"),
			pkg("internal/cmd/check", "internal/cmd/sql"),
		}, []string{
			"internal/cmd/check imports internal/cmd/sql: internal/cmd/check and internal/cmd/sql are rooms of layer internal/cmd, which import no other room: share through a layer below",
			"internal/cmd/lab imports internal/cmd/bench/sub: internal/cmd/lab and internal/cmd/bench are rooms of layer internal/cmd, which import no other room: share through a layer below",
			"internal/cmd/sem imports internal/cmd/lock: internal/cmd/sem and internal/cmd/lock are rooms of layer internal/cmd, which import no other room: share through a layer below",
		}},
		{"a room's subpackages are the room's; root and e2e assemble the rooms", []Package{
			pkg("internal/cmd/bench", "internal/cmd/bench/sub", "internal/cmd/cmdutil"),
			pkg("internal/cmd/root", "internal/cmd/check", "internal/cmd/sql", "internal/cmd/bench/sub"),
			pkg("internal/cmd/e2e", "internal/cmd/root"),
		}, nil},
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
