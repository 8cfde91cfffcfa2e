package image

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Main is cmd/mkimage: it parses args, builds the image of one binary
// (--name) and writes its OCI layout (OUT/oci/NAME) and tarballs
// (OUT/NAME-OS-ARCH.tar), then
// prints the index digest and one line per platform. It returns the exit
// code: 0, 1 for a failure, 2 for bad arguments.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "bin/image", "output directory: OUT/oci/NAME (the OCI layout) and OUT/NAME-OS-ARCH.tar")
	binName := fs.String("name", DefaultName, "the binary's name: "+BinDir+"/NAME, the entrypoint ("+DefaultName+" or "+SidecarName+")")
	version := fs.String("version", "", "the image's version and tag (make image: $(VERSION)); default: the binary's module version")
	ca := fs.String("ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "PEM CA bundle to install at "+CABundlePath)
	created := fs.String("created", os.Getenv("SOURCE_DATE_EPOCH"), "creation time and file times: Unix seconds or RFC 3339 (default $SOURCE_DATE_EPOCH, else 0)")
	source := fs.String("source", "", "org.opencontainers.image.source label")
	repo := fs.String("repository", "", "image name in the tarballs and the layout (default "+RepositoryPrefix+"NAME)")
	var bins binaryFlag
	fs.Var(&bins, "binary", "OS/ARCH=PATH of the static binary for that platform (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: mkimage [--name coordctl|coordkit-sidecar] --binary linux/amd64=bin/coordctl-linux-amd64 [--binary linux/arm64=...] [--version V] [--out DIR] [--created EPOCH]

Builds the OCI image of coordctl or coordkit-sidecar (no daemon, no registry): see internal/image.
Example: make image`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mkimage: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	when, err := parseCreated(*created)
	if err != nil {
		fmt.Fprintf(stderr, "mkimage: --created: %v\n", err)
		return 2
	}
	bundle, err := os.ReadFile(*ca)
	if err != nil {
		fmt.Fprintf(stderr, "mkimage: --ca-bundle: %v (Debian: apt-get install ca-certificates)\n", err)
		return 1
	}
	res, err := Build(Config{Name: *binName, Binaries: bins, CABundle: bundle, Created: when, Version: *version, Source: *source, Repository: *repo})
	if err != nil {
		fmt.Fprintf(stderr, "mkimage: %v\n", err)
		return 1
	}
	layoutDir := filepath.Join(*out, "oci", res.Name)
	if err := res.WriteLayout(layoutDir); err != nil {
		fmt.Fprintf(stderr, "mkimage: %v\n", err)
		return 1
	}
	tars, err := res.WriteTarballs(*out)
	if err != nil {
		fmt.Fprintf(stderr, "mkimage: %v\n", err)
		return 1
	}
	d, err := res.Index.Digest()
	if err != nil {
		fmt.Fprintf(stderr, "mkimage: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "image %s %s (OCI layout %s)\n", res.Tag, d, layoutDir)
	for i, p := range res.Platforms {
		pd, err := res.Images[p].Digest()
		if err != nil {
			fmt.Fprintf(stderr, "mkimage: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "  %s %s (docker load -i %s)\n", p, pd, tars[i])
	}
	return 0
}

func parseCreated(s string) (time.Time, error) {
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(n, 0).UTC(), nil
	}
	return time.Parse(time.RFC3339, s)
}

// binaryFlag is --binary OS/ARCH=PATH, repeatable.
type binaryFlag map[string]string

func (b *binaryFlag) String() string {
	var parts []string
	for k, v := range *b {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func (b *binaryFlag) Set(s string) error {
	p, path, ok := strings.Cut(s, "=")
	if !ok || p == "" || path == "" {
		return fmt.Errorf("want OS/ARCH=PATH, got %q", s)
	}
	if *b == nil {
		*b = binaryFlag{}
	}
	(*b)[p] = path
	return nil
}
