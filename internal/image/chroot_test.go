package image

import (
	"archive/tar"
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/etcdembed"
	"github.com/coordkit/coordkit/internal/testbin"
	"github.com/coordkit/coordkit/internal/testio"
)

// TestImageRunsInChrootAsNonRoot proves the image self-contained and
// non-root without a container runtime: it takes a static coordctl for
// the host's platform only (cross-compiling arm64 here would double the
// test's cost; `make image` builds both), unpacks the image's layers in
// order into a temporary root, and runs the binary there with chroot and
// the credentials 65532:65532 — `coordctl version`, then `coordctl etcd`
// and a `coordctl lock` whose child is coordctl itself.
func TestImageRunsInChrootAsNonRoot(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("chroot and credentials need Linux")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: chroot(2) and switching to uid 65532 are privileged (run the tests as root, as CI does)")
	}
	if testing.Short() {
		t.Skip("-short: builds coordctl")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	platform := runtime.GOOS + "/" + runtime.GOARCH
	bin := testbin.Path(t, testbin.Coordctl) // static, as make image builds it

	res, err := Build(Config{Binaries: map[string]string{platform: bin}, CABundle: []byte(testCA)})
	require.NoError(t, err)
	root := t.TempDir()
	require.NoError(t, os.Chmod(root, 0o755))
	unpack(t, mutate.Extract(res.Images[platform]), root)

	run := func(args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, BinaryPath, args...)
		cmd.Dir = "/"
		cmd.Env = []string{"PATH=/usr/local/bin", "HOME=" + Home}
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Chroot:     root,
			Credential: &syscall.Credential{Uid: UID, Gid: GID, Groups: []uint32{}},
			Setpgid:    true,
		}
		// exec.Cmd looks the path up outside the chroot: point it at the file
		// and let the kernel resolve BinaryPath inside.
		cmd.Path = BinaryPath
		return cmd
	}

	// 1. coordctl version, inside the root, as 65532.
	out, err := run("version", "-w", "json").Output()
	require.NoError(t, err, "%s", out)
	var v struct {
		Module, Platform string
	}
	require.NoError(t, json.Unmarshal(out, &v), string(out))
	require.Equal(t, "github.com/coordkit/coordkit", v.Module)
	require.Equal(t, platform, v.Platform)

	// 2. coordctl etcd, with its data in the image's /tmp.
	clientURL, err := etcdembed.FreeURL()
	require.NoError(t, err)
	peerURL, err := etcdembed.FreeURL()
	require.NoError(t, err)
	etcd := run("etcd", "--data-dir", "/tmp/etcd", "--listen-client-urls", clientURL, "--listen-peer-urls", peerURL)
	stdout, err := etcd.StdoutPipe()
	require.NoError(t, err)
	etcdErr := &testio.SyncBuffer{} // written by exec's copier while the test reads it
	etcd.Stderr = etcdErr
	require.NoError(t, etcd.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(-etcd.Process.Pid, syscall.SIGTERM)
		_ = etcd.Wait()
	})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ready ") {
				ready <- sc.Text()
			}
		}
		close(ready)
	}()
	select {
	case line, ok := <-ready:
		require.True(t, ok, "coordctl etcd exited before ready: %s", etcdErr.String())
		require.Contains(t, line, clientURL)
	case <-ctx.Done():
		t.Fatalf("coordctl etcd not ready: %s", etcdErr.String())
	}
	fi, err := os.Stat(filepath.Join(root, "tmp/etcd"))
	require.NoError(t, err)
	require.Equal(t, uint32(UID), fi.Sys().(*syscall.Stat_t).Uid, "etcd's data is written by uid 65532")

	// 3. A lock whose child is coordctl itself, found on the image's PATH.
	lock := run("--endpoints", clientURL, "lock", "image-test", "--", "coordctl", "version")
	out, err = lock.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "coordctl ", "the child's output")
	require.Contains(t, string(out), "etcd server: v3.")
}

// unpack writes a flattened image file system (mutate.Extract) under root
// with the modes and owners of the tar.
func unpack(t *testing.T, rc io.ReadCloser, root string) {
	t.Helper()
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		require.NoError(t, err)
		name := filepath.Clean("/" + h.Name)
		require.False(t, strings.Contains(h.Name, ".."), h.Name)
		path := filepath.Join(root, name)
		mode := os.FileMode(h.Mode & 0o777)
		if h.Mode&0o1000 != 0 {
			mode |= os.ModeSticky
		}
		switch h.Typeflag {
		case tar.TypeDir:
			require.NoError(t, os.MkdirAll(path, 0o755))
		case tar.TypeReg:
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
			require.NoError(t, err)
			_, err = io.Copy(f, tr)
			require.NoError(t, err)
			require.NoError(t, f.Close())
		default:
			t.Fatalf("unexpected entry %s of type %c", h.Name, h.Typeflag)
		}
		require.NoError(t, os.Chown(path, h.Uid, h.Gid))
		require.NoError(t, os.Chmod(path, mode))
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Remove()
	os.Exit(code)
}
