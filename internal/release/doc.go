// Package release keeps the version strings a user reads in step with the
// one source of truth, the file VERSION at the repository's root (the
// release this tree ships as; `make release` builds only that version).
//
// Check finds, in one file's text, the places that name coordkit's
// version: image references coordkit/coordctl:TAG and
// coordkit-sidecar:TAG (manifests, docs), the "version" key of
// `coordctl version -w json` examples, the changelog's entry and the
// Makefile's use of the file. Its test reads the repository's files and
// fails naming each one that disagrees. It does not know versions that
// are not coordkit's (an application's --version in an example is left
// alone) and does not look inside binaries: `make release` stamps those.
package release
