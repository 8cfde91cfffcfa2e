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

// Main is cmd/mkimage: it parses args, builds the image and writes the
// OCI layout (OUT/oci) and the tarballs (OUT/coordctl-OS-ARCH.tar), then
// prints the index digest and one line per platform. It returns the exit
// code: 0, 1 for a failure, 2 for bad arguments.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "bin/image", "output directory: OUT/oci (the OCI layout) and OUT/coordctl-OS-ARCH.tar")
	ca := fs.String("ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "PEM CA bundle to install at "+CABundlePath)
	created := fs.String("created", os.Getenv("SOURCE_DATE_EPOCH"), "creation time and file times: Unix seconds or RFC 3339 (default $SOURCE_DATE_EPOCH, else 0)")
	source := fs.String("source", "", "org.opencontainers.image.source label")
	repo := fs.String("repository", DefaultRepository, "image name in the tarballs and the layout")
	var bins binaryFlag
	fs.Var(&bins, "binary", "OS/ARCH=PATH of a static coordctl for that platform (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: mkimage --binary linux/amd64=bin/coordctl-linux-amd64 [--binary linux/arm64=...] [--out DIR] [--created EPOCH]

Builds coordctl's OCI image (no daemon, no registry): see internal/image.
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
	res, err := Build(Config{Binaries: bins, CABundle: bundle, Created: when, Source: *source, Repository: *repo})
	if err != nil {
		fmt.Fprintf(stderr, "mkimage: %v\n", err)
		return 1
	}
	if err := res.WriteLayout(filepath.Join(*out, "oci")); err != nil {
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
	fmt.Fprintf(stdout, "image %s %s (OCI layout %s)\n", res.Tag, d, filepath.Join(*out, "oci"))
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
