package depcheck

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// A Layer is a set of packages, named by path prefix relative to the module
// ("lock" holds lock and lock/...). Higher Rank is further up the arrow.
type Layer struct {
	Name     string
	Rank     int
	Prefixes []string
	// OpenTo, for an internal layer, lists the public packages (by path
	// prefix) that may import it; every other public package may not.
	OpenTo []string
	// Rooms makes each package directly under the layer's prefixes a room
	// (with its subpackages): a room imports no other room of the layer,
	// only layers below it (internal/cmd's command packages share through
	// internal/cmd/cmdutil, not through one another). Hubs are the rooms
	// exempt, by path: the ones that assemble the others.
	Rooms bool
	Hubs  []string
}

// Arrow returns coordkit's layers, top first.
func Arrow() []Layer {
	return []Layer{
		{Name: "cmd", Rank: 6, Prefixes: []string{"cmd"}}, // coordctl, coordkit-sidecar, and mkimage (make image)
		// The Kubernetes manifests: no code, a test that checks them
		// against internal/sidecar and internal/image.
		{Name: "deploy", Rank: 6, Prefixes: []string{"deploy"}},
		// coordctl's commands, one package per command group; root builds
		// the tree of them (sidecarroot the slim sidecar's), e2e runs the
		// built binary (tests only).
		{Name: "internal/cmd", Rank: 5, Prefixes: []string{"internal/cmd"}, Rooms: true, Hubs: []string{"internal/cmd/root", "internal/cmd/sidecarroot", "internal/cmd/e2e"}},
		// What every command shares: factory, printer, exit table, the one
		// usage error; and cmdutil/hold, the holds of lock, sem and elect.
		{Name: "internal/cmd/cmdutil", Rank: 4, Prefixes: []string{"internal/cmd/cmdutil"}},
		{Name: "{scenarios, internal/*}", Rank: 3, Prefixes: []string{"scenarios", "internal"}},
		{Name: "{lock, semaphore, election, claim, cluster, lamport}", Rank: 2, Prefixes: []string{"lock", "semaphore", "election", "claim", "cluster", "lamport"}},
		// The library's Prometheus metrics: fed by session's events, beside
		// the primitives (a program imports both), below every command.
		{Name: "metrics", Rank: 2, Prefixes: []string{"metrics"}},
		// What the primitives share and no user of them sees: their config,
		// key layout and handle plumbing. The one internal package a public
		// package may import, and only a primitive.
		{Name: "internal/primitive", Rank: 1, Prefixes: []string{"internal/primitive"}, OpenTo: []string{"lock", "semaphore", "election", "claim"}},
		{Name: "{session, fencing, chart}", Rank: 0, Prefixes: []string{"session", "fencing", "chart"}},
		// The API's clients in other languages; clients/python's Go file
		// only embeds coordkit.py for the bench that runs it.
		{Name: "clients", Rank: 0, Prefixes: []string{"clients"}},
	}
}

// Leaves returns the packages that import nothing from the module and
// nothing from etcd, directly or not.
func Leaves() []string { return []string{"fencing", "lamport", "chart"} }

// forbiddenInLeaves are the path prefixes (besides the module) a leaf may
// not depend on.
var forbiddenInLeaves = []string{"go.etcd.io/"}

// Package is one package of the module as `go list` reports it: full import
// paths, Imports direct, Deps transitive (both without test files).
type Package struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// A Violation is one import that breaks a rule.
type Violation struct {
	From, To string // paths relative to the module; To is empty for "not in a layer"
	Rule     string
}

func (v Violation) String() string {
	if v.To == "" {
		return fmt.Sprintf("%s: %s", v.From, v.Rule)
	}
	return fmt.Sprintf("%s imports %s: %s", v.From, v.To, v.Rule)
}

// Check returns every violation of the rules by pkgs, packages of module,
// sorted. It is pure: the caller lists the packages.
func Check(module string, layers []Layer, leaves []string, pkgs []Package) []Violation {
	var out []Violation
	rel := func(p string) (string, bool) {
		if p == module {
			return ".", true
		}
		r, ok := strings.CutPrefix(p, module+"/")
		return r, ok
	}
	isLeaf := map[string]bool{}
	for _, l := range leaves {
		isLeaf[l] = true
	}
	for _, p := range pkgs {
		from, ok := rel(p.ImportPath)
		if !ok {
			continue
		}
		fl, ok := layerOf(layers, from)
		if !ok {
			out = append(out, Violation{From: from, Rule: "in no layer of the arrow; place it in depcheck.Arrow"})
			continue
		}
		for _, imp := range p.Imports {
			to, ok := rel(imp)
			if !ok {
				continue
			}
			if tl, ok := layerOf(layers, to); ok && tl.Rank > fl.Rank {
				out = append(out, Violation{From: from, To: to,
					Rule: fmt.Sprintf("layer %s imports layer %s, which is above it", fl.Name, tl.Name)})
			}
			if tl, ok := layerOf(layers, to); ok && fl.Rooms && tl.Name == fl.Name {
				if rf, rt := roomOf(fl, from), roomOf(fl, to); rf != rt && !slices.Contains(fl.Hubs, rf) {
					out = append(out, Violation{From: from, To: to,
						Rule: fmt.Sprintf("%s and %s are rooms of layer %s, which import no other room: share through a layer below", rf, rt, fl.Name)})
				}
			}
			if !isInternal(from) && !strings.HasPrefix(from, "cmd/") && from != "cmd" && isInternal(to) && !openTo(layers, to, from) {
				out = append(out, Violation{From: from, To: to, Rule: "a public package imports an internal one"})
			}
		}
		if isLeaf[from] {
			for _, d := range p.Deps {
				if r, ok := rel(d); ok {
					out = append(out, Violation{From: from, To: r, Rule: "a leaf (" + strings.Join(leaves, ", ") + ") depends on this module"})
					continue
				}
				for _, f := range forbiddenInLeaves {
					if strings.HasPrefix(d, f) {
						out = append(out, Violation{From: from, To: d, Rule: "a leaf (" + strings.Join(leaves, ", ") + ") depends on etcd"})
					}
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// layerOf finds the layer of the longest prefix matching path.
func layerOf(layers []Layer, path string) (Layer, bool) {
	var best Layer
	bestLen := -1
	for _, l := range layers {
		for _, pre := range l.Prefixes {
			if (path == pre || strings.HasPrefix(path, pre+"/")) && len(pre) > bestLen {
				best, bestLen = l, len(pre)
			}
		}
	}
	return best, bestLen >= 0
}

// roomOf is the room of layer l that path is in: the prefix and the
// first segment under it.
func roomOf(l Layer, path string) string {
	for _, pre := range l.Prefixes {
		if rest, ok := strings.CutPrefix(path, pre+"/"); ok {
			first, _, _ := strings.Cut(rest, "/")
			return pre + "/" + first
		}
	}
	return path
}

// openTo reports whether the internal package to is in a layer open to
// the public package from.
func openTo(layers []Layer, to, from string) bool {
	l, ok := layerOf(layers, to)
	if !ok {
		return false
	}
	for _, pre := range l.OpenTo {
		if from == pre || strings.HasPrefix(from, pre+"/") {
			return true
		}
	}
	return false
}

func isInternal(path string) bool {
	return path == "internal" || strings.HasPrefix(path, "internal/") || strings.Contains(path, "/internal/") || strings.HasSuffix(path, "/internal")
}
