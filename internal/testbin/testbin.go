// Package testbin gives end-to-end tests the built coordctl and
// coordkit-sidecar binaries, and the python3 whose modules a test needs
// (Python).
//
// `make test` builds them once, before the tests, with `make testbin`: in
// the form a release ships them (static, -trimpath, stripped; the sidecar
// with SIDECAR_TAGS), and names their directory in COORDKIT_TEST_BIN;
// every test package that runs them uses those two files. A test run
// without make's variable (go test ./internal/cmd/e2e/) runs `make
// testbin` into a temporary directory, once per test binary.
//
// The binaries are not built with the race detector: the code they run is
// raced in its own packages' tests (in process), and a -race coordctl per
// process made the end-to-end tests CPU-bound on a two-core machine. A
// COORDKIT_TEST_BIN that names a directory without the two files is an
// error, not a fallback: a stale or missing build would otherwise be
// tested in silence.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// EnvDir names the directory holding the prebuilt binaries.
const EnvDir = "COORDKIT_TEST_BIN"

// The two binaries, by their file names under cmd/.
const (
	Coordctl = "coordctl"
	Sidecar  = "coordkit-sidecar"
)

var (
	once   sync.Once
	dir    string
	dirErr error
	built  bool // dir was made here, and Remove deletes it
)

// Path returns the path of the named binary (Coordctl or Sidecar),
// building both once per test binary when COORDKIT_TEST_BIN is not set. A
// failed build fails t.
func Path(t testing.TB, name string) string {
	t.Helper()
	if name != Coordctl && name != Sidecar {
		t.Fatalf("testbin: no binary %q (want %q or %q)", name, Coordctl, Sidecar)
	}
	once.Do(func() { dir, dirErr = locate() })
	if dirErr != nil {
		t.Fatalf("testbin: %v", dirErr)
	}
	return filepath.Join(dir, name)
}

// locate returns the prebuilt directory, checked, or builds into a new one.
func locate() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		for _, name := range []string{Coordctl, Sidecar} {
			if _, err := os.Stat(filepath.Join(d, name)); err != nil {
				return "", fmt.Errorf("%s=%s: %w (make test builds it; unset %s to build in the test)", EnvDir, d, err, EnvDir)
			}
		}
		return d, nil
	}
	d, err := os.MkdirTemp("", "coordkit-testbin-")
	if err != nil {
		return "", err
	}
	built = true
	if err := build(d); err != nil {
		return "", err
	}
	return d, nil
}

// Remove deletes the binaries Path built (never make's); a TestMain calls
// it after m.Run.
func Remove() {
	if built {
		_ = os.RemoveAll(dir)
	}
}

// build runs `make testbin` (the Makefile is the one place that says how
// a release builds the binaries) with TESTBIN set to dir, in the module's
// root.
func build(dir string) error {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	cmd := exec.Command("make", "-s", "testbin", "TESTBIN="+dir)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("make testbin in %s: %v\n%s", root, err, out)
	}
	return nil
}

// Python returns a python3 that imports modules ("redis, psycopg2"): the
// one on PATH if it does, else Debian's /usr/bin/python3 (Debian's
// python3-redis and python3-psycopg2 serve only it; a pyenv python3 earlier
// on PATH does not see them). With none, t is skipped, naming packages to
// install — failed under CI=true, where .ci/run installs them.
func Python(t testing.TB, modules, packages string) string {
	t.Helper()
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if p, err := exec.LookPath(py); err == nil && exec.Command(p, "-c", "import "+modules).Run() == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("no python3 imports %s: install %s", modules, packages)
	}
	t.Skipf("no python3 imports %s: install %s", modules, packages)
	return ""
}
