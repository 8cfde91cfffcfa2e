package image

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/validate"
	"github.com/stretchr/testify/require"
)

const testCA = "-----BEGIN CERTIFICATE-----\nMIIBtest\n-----END CERTIFICATE-----\n"

// fakeBinaries writes a stand-in binary per platform: the image's
// structure and digest do not depend on what the binary is.
func fakeBinaries(t *testing.T, platforms ...string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	out := map[string]string{}
	for _, p := range platforms {
		path := filepath.Join(dir, filepath.Base(p))
		require.NoError(t, os.WriteFile(path, []byte("#!binary for "+p+"\n"), 0o755))
		out[p] = path
	}
	return out
}

// build writes the layout and tarballs of cfg into a fresh directory and
// returns the index digest and the directory.
func build(t *testing.T, cfg Config) (string, string) {
	t.Helper()
	res, err := Build(cfg)
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, res.WriteLayout(filepath.Join(dir, "oci")))
	_, err = res.WriteTarballs(dir)
	require.NoError(t, err)
	d, err := res.Index.Digest()
	require.NoError(t, err)
	return d.String(), dir
}

func TestBuildIsReproducible(t *testing.T) {
	created := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	cfg := Config{Binaries: fakeBinaries(t, "linux/amd64", "linux/arm64"), CABundle: []byte(testCA),
		Created: created, Version: "v0.9.0", Revision: "abc"}
	d1, dir1 := build(t, cfg)
	d2, dir2 := build(t, cfg)
	require.Equal(t, d1, d2, "same inputs, same digest")
	for _, f := range []string{"oci/index.json", "coordctl-linux-amd64.tar", "coordctl-linux-arm64.tar"} {
		b1, err := os.ReadFile(filepath.Join(dir1, f))
		require.NoError(t, err)
		b2, err := os.ReadFile(filepath.Join(dir2, f))
		require.NoError(t, err)
		require.True(t, bytes.Equal(b1, b2), "%s differs between two builds", f)
	}

	// A different input changes it: the digest is not a constant.
	cfg.Created = created.Add(time.Second)
	d3, _ := build(t, cfg)
	require.NotEqual(t, d1, d3)
}

func TestImageShape(t *testing.T) {
	cfg := Config{Binaries: fakeBinaries(t, "linux/arm64", "linux/amd64"), CABundle: []byte(testCA),
		Version: "v1.2.3+dirty", Revision: "0123abc", Source: "https://example.invalid/coordkit"}
	_, dir := build(t, cfg)

	p, err := layout.FromPath(filepath.Join(dir, "oci"))
	require.NoError(t, err)
	top, err := p.ImageIndex()
	require.NoError(t, err)
	tm, err := top.IndexManifest()
	require.NoError(t, err)
	require.Len(t, tm.Manifests, 1)
	require.Equal(t, "coordkit/coordctl:v1.2.3-dirty", tm.Manifests[0].Annotations["org.opencontainers.image.ref.name"])
	idx, err := top.ImageIndex(tm.Manifests[0].Digest)
	require.NoError(t, err)
	require.NoError(t, validate.Index(idx))
	im, err := idx.IndexManifest()
	require.NoError(t, err)
	require.Equal(t, "application/vnd.oci.image.index.v1+json", string(im.MediaType))
	require.Len(t, im.Manifests, 2)
	require.Equal(t, "amd64", im.Manifests[0].Platform.Architecture, "platforms in sorted order")
	require.Equal(t, "arm64", im.Manifests[1].Platform.Architecture)

	for _, m := range im.Manifests {
		img, err := idx.Image(m.Digest)
		require.NoError(t, err)
		mt, err := img.MediaType()
		require.NoError(t, err)
		require.Equal(t, "application/vnd.oci.image.manifest.v1+json", string(mt))
		cf, err := img.ConfigFile()
		require.NoError(t, err)
		require.Equal(t, "65532:65532", cf.Config.User)
		require.Equal(t, []string{BinaryPath}, cf.Config.Entrypoint)
		require.Equal(t, m.Platform.Architecture, cf.Architecture)
		require.Equal(t, "linux", cf.OS)
		require.Equal(t, "v1.2.3+dirty", cf.Config.Labels["org.opencontainers.image.version"])
		require.Equal(t, "0123abc", cf.Config.Labels["org.opencontainers.image.revision"])
		require.Equal(t, "https://example.invalid/coordkit", cf.Config.Labels["org.opencontainers.image.source"])
		require.Equal(t, "1970-01-01T00:00:00Z", cf.Config.Labels["org.opencontainers.image.created"])
		require.Contains(t, cf.Config.Env, "SSL_CERT_FILE="+CABundlePath)

		files := flatten(t, mutate.Extract(img))
		require.Equal(t, "root:x:0:\nnonroot:x:65532:\n", string(files["etc/group"].body))
		require.Contains(t, string(files["etc/passwd"].body), "nonroot:x:65532:65532:")
		require.Equal(t, testCA, string(files["etc/ssl/certs/ca-certificates.crt"].body))
		require.Equal(t, int64(0o1777), files["tmp"].mode, "a writable /tmp with the sticky bit")
		require.Equal(t, 65532, files["home/nonroot"].uid)
		require.Equal(t, int64(0o755), files["usr/local/bin/coordctl"].mode)
		require.Contains(t, string(files["usr/local/bin/coordctl"].body), "binary for linux/"+m.Platform.Architecture)
	}

	// Each tarball loads as one image of its platform (what docker load reads).
	for _, arch := range []string{"amd64", "arm64"} {
		img, err := tarball.ImageFromPath(filepath.Join(dir, "coordctl-linux-"+arch+".tar"), nil)
		require.NoError(t, err)
		require.NoError(t, validate.Image(img))
		cf, err := img.ConfigFile()
		require.NoError(t, err)
		require.Equal(t, arch, cf.Architecture)
	}
}

// The slim sidecar's image: the same base, its binary at its own path as
// the entrypoint, named and tagged by it.
func TestSidecarImage(t *testing.T) {
	cfg := Config{Name: SidecarName, Binaries: fakeBinaries(t, "linux/amd64"), CABundle: []byte(testCA), Version: "v0.5.0"}
	res, err := Build(cfg)
	require.NoError(t, err)
	require.Equal(t, "coordkit/coordkit-sidecar:v0.5.0", res.Tag)
	dir := t.TempDir()
	paths, err := res.WriteTarballs(dir)
	require.NoError(t, err)
	require.Equal(t, []string{filepath.Join(dir, "coordkit-sidecar-linux-amd64.tar")}, paths)
	img, err := tarball.ImageFromPath(paths[0], nil)
	require.NoError(t, err)
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	require.Equal(t, []string{"/usr/local/bin/coordkit-sidecar"}, cf.Config.Entrypoint)
	require.Equal(t, "coordkit-sidecar", cf.Config.Labels["org.opencontainers.image.title"])
	require.Equal(t, "65532:65532", cf.Config.User)
	files := flatten(t, mutate.Extract(img))
	require.Contains(t, string(files["usr/local/bin/coordkit-sidecar"].body), "binary for linux/amd64")
	require.NotContains(t, files, "usr/local/bin/coordctl")
	require.Equal(t, testCA, string(files["etc/ssl/certs/ca-certificates.crt"].body), "the same base as coordctl's")
}

func TestBuildErrors(t *testing.T) {
	_, err := Build(Config{CABundle: []byte(testCA)})
	require.True(t, errors.Is(err, ErrNoBinary), "%v", err)
	_, err = Build(Config{Binaries: map[string]string{"linux/amd64": "/nonexistent/coordctl"}, CABundle: []byte(testCA)})
	require.True(t, errors.Is(err, ErrNoBinary), "%v", err)
	_, err = Build(Config{Binaries: fakeBinaries(t, "linux/amd64")})
	require.True(t, errors.Is(err, ErrNoCABundle), "%v", err)
	_, err = Build(Config{Binaries: map[string]string{"amd64": "/x"}, CABundle: []byte(testCA)})
	require.True(t, errors.Is(err, ErrPlatform), "%v", err)
	_, err = Build(Config{Name: "../coordctl", Binaries: fakeBinaries(t, "linux/amd64"), CABundle: []byte(testCA)})
	require.True(t, errors.Is(err, ErrName), "%v", err)
}

func TestTagOf(t *testing.T) {
	for in, want := range map[string]string{
		"v1.2.3": "v1.2.3", "(devel)": "devel", "": "devel",
		"v0.0.0-20261201100000-0123456789ab+dirty": "v0.0.0-20261201100000-0123456789ab-dirty",
	} {
		require.Equal(t, want, tagOf(in), in)
	}
}

type entry struct {
	mode     int64
	uid      int
	body     []byte
	typeflag byte
}

// flatten reads a tar stream into a map by name.
func flatten(t *testing.T, rc io.ReadCloser) map[string]entry {
	t.Helper()
	defer rc.Close()
	out := map[string]entry{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		out[h.Name] = entry{mode: h.Mode, uid: h.Uid, body: b, typeflag: h.Typeflag}
	}
}
