package image

import (
	"archive/tar"
	"bytes"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's fixed facts.
const (
	// UID and GID are the non-root user the image runs as (the "nonroot"
	// user of distroless images).
	UID = 65532
	GID = 65532
	// BinDir is where an image's binary lives; BinDir/NAME is the
	// entrypoint.
	BinDir = "/usr/local/bin"
	// BinaryPath is where coordctl lives in coordctl's image.
	BinaryPath = BinDir + "/" + DefaultName
	// DefaultName is the binary an image holds unless Config.Name says
	// otherwise; SidecarName is the slim sidecar's (cmd/coordkit-sidecar).
	DefaultName = "coordctl"
	SidecarName = "coordkit-sidecar"
	// CABundlePath is the CA bundle, also named by SSL_CERT_FILE.
	CABundlePath = "/etc/ssl/certs/ca-certificates.crt"
	// Home is user 65532's home and the working directory.
	Home = "/home/nonroot"
	// RepositoryPrefix + NAME names an image in the tarballs and the
	// layout unless Config.Repository says otherwise.
	RepositoryPrefix = "coordkit/"
	// DefaultRepository names coordctl's image.
	DefaultRepository = RepositoryPrefix + DefaultName
)

// Errors of Build.
var (
	// ErrNoBinary: no platform was given, or a binary is missing.
	ErrNoBinary = errors.New("image: no binary")
	// ErrPlatform: a platform is not OS/ARCH.
	ErrPlatform = errors.New("image: bad platform")
	// ErrNoCABundle: the CA bundle is empty.
	ErrNoCABundle = errors.New("image: empty CA bundle")
	// ErrName: Config.Name is not a plain file name.
	ErrName = errors.New("image: bad binary name")
)

// Descriptions are the org.opencontainers.image.description labels of the
// images `make image` builds, by binary name.
var descriptions = map[string]string{
	DefaultName: "Fenced locks, leader election (a sidecar) and a Raft lab on etcd",
	SidecarName: "coordctl's leader-election sidecar alone: etcd's client, no etcd server, lab or SQL drivers",
}

// Config says what goes into the image.
type Config struct {
	// Name is the binary's name: it is installed at BinDir/Name, the
	// entrypoint, and names the image (RepositoryPrefix+Name) and its
	// tarballs. DefaultName (coordctl) when empty; SidecarName for the
	// slim sidecar.
	Name string
	// Binaries maps a platform, "linux/amd64", to the path of a static
	// binary (CGO_ENABLED=0) built for it. At least one.
	Binaries map[string]string
	// CABundle is the PEM bundle installed at CABundlePath. Required.
	CABundle []byte
	// Created is the image's creation time and every file's modification
	// time: fix it (SOURCE_DATE_EPOCH) for a reproducible digest. The
	// zero value means 1970-01-01T00:00:00Z.
	Created time.Time
	// Version and Revision label the image; when empty they are read from
	// the first binary's build information, as `coordctl version` prints it.
	Version, Revision string
	// Source is the org.opencontainers.image.source label; optional.
	Source string
	// Repository names the image in the tarballs and the layout's
	// ref.name; RepositoryPrefix+Name when empty.
	Repository string
}

var plainName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// Result is what Build made.
type Result struct {
	// Name is the binary's name (Config.Name).
	Name string
	// Index is the multi-platform index; its digest is the image's.
	Index v1.ImageIndex
	// Images are the per-platform images, by platform.
	Images map[string]v1.Image
	// Platforms are the keys of Images, sorted.
	Platforms []string
	// Tag is Repository:Version (made a valid tag).
	Tag string
}

// Build assembles the image of every platform and the index. It reads
// the binaries but writes nothing; see Result.WriteLayout and
// Result.WriteTarballs. Errors wrap ErrNoBinary, ErrPlatform,
// ErrNoCABundle or ErrName, or come from reading the files.
func Build(cfg Config) (*Result, error) {
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	if !plainName.MatchString(cfg.Name) {
		return nil, fmt.Errorf("%w %q: want a file name such as %s", ErrName, cfg.Name, SidecarName)
	}
	if len(cfg.Binaries) == 0 {
		return nil, fmt.Errorf("%w: give at least one platform's binary", ErrNoBinary)
	}
	if len(bytes.TrimSpace(cfg.CABundle)) == 0 {
		return nil, ErrNoCABundle
	}
	platforms := make([]string, 0, len(cfg.Binaries))
	for p := range cfg.Binaries {
		platforms = append(platforms, p)
	}
	sort.Strings(platforms)
	if cfg.Created.IsZero() {
		cfg.Created = time.Unix(0, 0)
	}
	cfg.Created = cfg.Created.UTC()
	if cfg.Repository == "" {
		cfg.Repository = RepositoryPrefix + cfg.Name
	}
	if cfg.Version == "" || cfg.Revision == "" {
		v, r := versionOf(cfg.Binaries[platforms[0]])
		if cfg.Version == "" {
			cfg.Version = v
		}
		if cfg.Revision == "" {
			cfg.Revision = r
		}
	}

	base, err := layerOf(baseFiles(cfg.CABundle), cfg.Created)
	if err != nil {
		return nil, err
	}
	res := &Result{Name: cfg.Name, Images: map[string]v1.Image{}, Platforms: platforms, Tag: cfg.Repository + ":" + tagOf(cfg.Version)}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		osName, arch, ok := strings.Cut(p, "/")
		if !ok || osName == "" || arch == "" || strings.Contains(arch, "/") {
			return nil, fmt.Errorf("%w %q: want OS/ARCH, e.g. linux/amd64", ErrPlatform, p)
		}
		bin, err := os.ReadFile(cfg.Binaries[p])
		if err != nil {
			return nil, fmt.Errorf("%w for %s: %w", ErrNoBinary, p, err)
		}
		img, err := platformImage(cfg, base, bin, osName, arch)
		if err != nil {
			return nil, fmt.Errorf("image: %s: %w", p, err)
		}
		res.Images[p] = img
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: osName, Architecture: arch}},
		})
	}
	res.Index = idx
	return res, nil
}

// A file is one entry of a layer.
type file struct {
	name     string // without a leading slash
	mode     int64
	uid, gid int
	dir      bool
	body     []byte
}

func baseFiles(caBundle []byte) []file {
	dir := func(n string, mode int64, owner int) file {
		return file{name: n, mode: mode, dir: true, uid: owner, gid: owner}
	}
	reg := func(n string, mode int64, body string) file { return file{name: n, mode: mode, body: []byte(body)} }
	return []file{
		dir("etc", 0o755, 0),
		reg("etc/group", 0o644, fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", GID)),
		reg("etc/passwd", 0o644, fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:%s:/sbin/nologin\n", UID, GID, Home)),
		dir("etc/ssl", 0o755, 0),
		dir("etc/ssl/certs", 0o755, 0),
		{name: strings.TrimPrefix(CABundlePath, "/"), mode: 0o644, body: caBundle},
		dir("home", 0o755, 0),
		dir(strings.TrimPrefix(Home, "/"), 0o700, UID),
		dir("tmp", 0o1777, 0),
	}
}

func binaryFiles(name string, bin []byte) []file {
	return []file{
		{name: "usr", mode: 0o755, dir: true},
		{name: "usr/local", mode: 0o755, dir: true},
		{name: "usr/local/bin", mode: 0o755, dir: true},
		{name: strings.TrimPrefix(BinDir, "/") + "/" + name, mode: 0o755, body: bin},
	}
}

// layerOf writes files, in the order given, into a tar with fixed times
// and owners, and makes it a gzip-compressed OCI layer.
func layerOf(files []file, mtime time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{
			Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.gid, ModTime: mtime,
			Format: tar.FormatPAX, Typeflag: tar.TypeReg, Size: int64(len(f.body)),
		}
		if f.dir {
			h.Name += "/"
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
}

func platformImage(cfg Config, base v1.Layer, bin []byte, osName, arch string) (v1.Image, error) {
	binLayer, err := layerOf(binaryFiles(cfg.Name, bin), cfg.Created)
	binPath := BinDir + "/" + cfg.Name
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: cfg.Created}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, MediaType: types.OCILayer, History: v1.History{Created: created,
			CreatedBy: "mkimage: CA bundle, /etc/passwd and /etc/group (nonroot 65532), /tmp, " + Home}},
		mutate.Addendum{Layer: binLayer, MediaType: types.OCILayer, History: v1.History{Created: created,
			CreatedBy: "mkimage: " + binPath + " (CGO_ENABLED=0)"}},
	)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = osName, arch, created
	cf.Author = "coordkit"
	cf.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", UID, GID),
		Entrypoint: []string{binPath},
		WorkingDir: Home,
		Env: []string{
			"PATH=/usr/local/bin:/usr/bin:/bin",
			"HOME=" + Home,
			"SSL_CERT_FILE=" + CABundlePath,
		},
		Labels: labels(cfg),
	}
	return mutate.ConfigFile(img, cf)
}

func description(name string) string {
	if d, ok := descriptions[name]; ok {
		return d
	}
	return "coordkit's " + name
}

func labels(cfg Config) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       cfg.Name,
		"org.opencontainers.image.description": description(cfg.Name),
		"org.opencontainers.image.created":     cfg.Created.Format(time.RFC3339),
		"org.opencontainers.image.version":     cfg.Version,
		"org.opencontainers.image.vendor":      "coordkit",
		"org.opencontainers.image.ref.name":    tagOf(cfg.Version),
	}
	if cfg.Revision != "" {
		l["org.opencontainers.image.revision"] = cfg.Revision
	}
	if cfg.Source != "" {
		l["org.opencontainers.image.source"] = cfg.Source
	}
	return l
}

// versionOf reads the module version and VCS revision from a Go binary's
// build information; "(devel)" and "" when it has none.
func versionOf(path string) (version, revision string) {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return "(devel)", ""
	}
	version = bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			revision = s.Value
		}
	}
	return version, revision
}

var badTagChars = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

// tagOf makes version a valid image tag: "(devel)" becomes "devel",
// "v1.2.3+dirty" becomes "v1.2.3-dirty".
func tagOf(version string) string {
	t := strings.Trim(badTagChars.ReplaceAllString(version, "-"), "-.")
	if t == "" {
		return "devel"
	}
	if len(t) > 128 {
		t = t[:128]
	}
	return t
}

// WriteLayout writes the OCI image layout into dir (created, and emptied
// of an earlier layout): index.json names the multi-platform index.
func (r *Result) WriteLayout(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("image: layout: %w", err)
	}
	if err := p.AppendIndex(r.Index, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": r.Tag,
	})); err != nil {
		return fmt.Errorf("image: layout: %w", err)
	}
	return nil
}

// WriteTarballs writes one `docker load`-able tarball per platform into
// dir, named NAME-OS-ARCH.tar (coordctl-linux-amd64.tar), tagged r.Tag, and returns their paths
// in platform order. (A docker tarball holds one image per tag, so the
// platforms get a file each; the OCI layout holds them all.)
func (r *Result) WriteTarballs(dir string) ([]string, error) {
	tag, err := name.NewTag(r.Tag)
	if err != nil {
		return nil, fmt.Errorf("image: tag %q: %w", r.Tag, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	for _, p := range r.Platforms {
		path := filepath.Join(dir, r.Name+"-"+strings.ReplaceAll(p, "/", "-")+".tar")
		if err := tarball.WriteToFile(path, tag, r.Images[p]); err != nil {
			return nil, fmt.Errorf("image: tarball %s: %w", p, err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}
