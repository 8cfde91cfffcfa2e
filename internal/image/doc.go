// Package image builds the OCI images of coordctl and of the slim
// coordkit-sidecar without a container daemon or a registry, with
// go-containerregistry: two layers appended to an empty base — the files
// a static binary needs (a CA bundle, /etc/passwd and /etc/group with the
// non-root user 65532, a writable /tmp and the user's home) and the binary
// itself at /usr/local/bin/NAME (Config.Name) — with
// User 65532:65532, the entrypoint and the org.opencontainers.image.*
// labels, one image per platform in one OCI index.
//
// Build is reproducible: the same binaries, CA bundle and Created time
// give the same index digest, byte for byte the same layout and tarballs
// (fixed file times, owners and order; gzip without a time stamp). It
// does not make the binaries reproducible; `make image` builds them with
// -trimpath, which Go's toolchain makes reproducible for one commit.
//
// cmd/mkimage is its command line (`make image`).
package image
