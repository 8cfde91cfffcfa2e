package election

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

func TestCompareVersionsTable(t *testing.T) {
	// semver.org §11's own chain, then the edges.
	chain := []string{"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta",
		"1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "v2.0.0", "10.0.0"}
	for i := range chain {
		for j := range chain {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := CompareVersions(chain[i], chain[j]); got != want {
				t.Errorf("CompareVersions(%q, %q) = %d, want %d", chain[i], chain[j], got, want)
			}
		}
	}
	cases := []struct {
		name string
		a, b string
		want int
	}{
		{"build metadata ignored", "1.2.3+build.7", "1.2.3", 0},
		{"v prefix", "v1.2.3", "1.2.3", 0},
		{"invalid below valid", "banana", "0.0.1", -1},
		{"two invalid equal", "banana", "", 0},
		{"leading zero invalid", "01.2.3", "0.0.1", -1},
		{"two parts invalid", "1.2", "0.0.1", -1},
		{"empty pre-release invalid", "1.2.3-", "0.0.1", -1},
		{"pre-release leading zero invalid", "1.2.3-01", "0.0.1", -1},
		{"numeric below alphanumeric", "1.0.0-1", "1.0.0-a", -1},
		{"hyphen in pre-release", "1.0.0-x-y", "1.0.0-x", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := CompareVersions(tc.a, tc.b); got != tc.want {
				t.Fatalf("CompareVersions(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
			}
		})
	}
}

func genVersion(t *rapid.T, label string) string {
	s := fmt.Sprintf("%d.%d.%d", rapid.IntRange(0, 3).Draw(t, label+"maj"), rapid.IntRange(0, 3).Draw(t, label+"min"), rapid.IntRange(0, 3).Draw(t, label+"pat"))
	if rapid.Bool().Draw(t, label+"pre?") {
		ids := rapid.SliceOfN(rapid.SampledFrom([]string{"alpha", "beta", "rc", "1", "2", "11", "x-y"}), 1, 3).Draw(t, label+"pre")
		for i, id := range ids {
			sep := "."
			if i == 0 {
				sep = "-"
			}
			s += sep + id
		}
	}
	if rapid.Bool().Draw(t, label+"build?") {
		s += "+b." + rapid.SampledFrom([]string{"1", "x", "007"}).Draw(t, label+"build")
	}
	return s
}

// CompareVersions is a total preorder: antisymmetric and transitive, and
// reflexive on every generated version.
func TestCompareVersionsOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b, c := genVersion(t, "a"), genVersion(t, "b"), genVersion(t, "c")
		for _, v := range []string{a, b, c} {
			if !ValidVersion(v) {
				t.Fatalf("%q does not parse", v)
			}
			if CompareVersions(v, v) != 0 {
				t.Fatalf("%q != itself", v)
			}
		}
		if CompareVersions(a, b) != -CompareVersions(b, a) {
			t.Fatalf("not antisymmetric: %q %q", a, b)
		}
		if CompareVersions(a, b) <= 0 && CompareVersions(b, c) <= 0 && CompareVersions(a, c) > 0 {
			t.Fatalf("not transitive: %q <= %q <= %q but %q > %q", a, b, c, a, c)
		}
	})
}
