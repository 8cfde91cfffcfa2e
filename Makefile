GO ?= go
STATICCHECK_VERSION ?= v0.8.2
PKGS := ./...

.PHONY: all build test testbin test-short demo bench lint scenarios check-long clean lab lab-screenshot image release figure16

all: build

## Versions (docs/compatibility.md). VERSION names a build: `git describe
## --tags --always --dirty` (v0.5.0 on the tag, v0.5.0-3-gabc1234 three
## commits past it, -dirty with uncommitted changes, the bare commit before
## the first tag). It is stamped into the binaries (-ldflags -X, what
## `coordctl version` prints; a plain `go build` has the module version
## instead) and tags the images. The file VERSION is the release this tree
## ships as: the manifests and docs name it (internal/release's test keeps
## them in step), and `make release` builds only that version.
ifeq ($(origin VERSION),undefined)
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
endif
LDFLAGS = -X github.com/coordkit/coordkit/internal/buildinfo.version=$(VERSION)
## The slim sidecar's build tags: no gRPC request tracing (golang.org/x/net/trace,
## off unless a program enables it, pulls in html/template) and no HTTP/2 in
## net/http (the sidecar's API, probes and --health-url speak HTTP/1.1; etcd's
## gRPC client has its own HTTP/2): 17.2 MB -> 13.4 MB stripped.
SIDECAR_TAGS ?= grpcnotrace,nethttpomithttp2
BINARIES := coordctl coordkit-sidecar
# A static (CGO_ENABLED=0), trimmed, stripped binary of $$name for $$os/$$arch at $$out.
STATIC_BUILD = CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -buildvcs=auto \
	-tags "$$(if [ $$name = coordkit-sidecar ]; then echo $(SIDECAR_TAGS); fi)" \
	-ldflags "-s -w $(LDFLAGS)" -o $$out ./cmd/$$name

## build: bin/coordctl and bin/coordkit-sidecar for this machine, stamped with VERSION.
build:
	$(GO) build -buildvcs=auto -ldflags "$(LDFLAGS)" -o bin/coordctl ./cmd/coordctl
	$(GO) build -buildvcs=auto -tags "$(SIDECAR_TAGS)" -ldflags "$(LDFLAGS)" -o bin/coordkit-sidecar ./cmd/coordkit-sidecar

## testbin: coordctl and coordkit-sidecar for this machine, built as a
## release builds them (STATIC_BUILD), in TESTBIN: the binaries the
## end-to-end tests run (internal/testbin; make test builds them first).
TESTBIN ?= bin/test
testbin:
	@set -e; os=$$($(GO) env GOOS); arch=$$($(GO) env GOARCH); \
	for name in $(BINARIES); do out=$(TESTBIN)/$$name; $(STATIC_BUILD); done

## image: the OCI images of coordctl and of the slim coordkit-sidecar for
## linux/amd64 and linux/arm64, built without a daemon or a registry
## (cmd/mkimage, internal/image), tagged coordkit/NAME:$(VERSION):
## bin/image/oci/NAME (the OCI layout, one index) and
## bin/image/NAME-linux-ARCH.tar (docker load -i). Static binaries
## (CGO_ENABLED=0, -trimpath, stripped); file and image times are
## SOURCE_DATE_EPOCH (default: the last commit's time), so the same commit
## gives the same digest.
IMAGE_DIR ?= bin/image
IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
image:
	@mkdir -p $(IMAGE_DIR)
	@set -e; for name in $(BINARIES); do bins=""; for p in $(IMAGE_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; out=$(IMAGE_DIR)/$$name-$$os-$$arch; \
		echo "build $$p -> $$out"; $(STATIC_BUILD); \
		bins="$$bins --binary $$p=$$out"; \
	done; \
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(GO) run ./cmd/mkimage --name $$name --version $(VERSION) --out $(IMAGE_DIR) $$bins; \
	done

## release: make release VERSION=v0.5.0 (the file VERSION's, from a clean
## tree): coordctl and coordkit-sidecar for linux and darwin on amd64 and
## arm64 in dist/ (NAME-VERSION-OS-ARCH), both images (dist/image, as
## make image), and dist/SHA256SUMS over all of them.
DIST ?= dist
RELEASE_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
release:
	@want="$$(cat VERSION)"; if [ "$(VERSION)" != "$$want" ]; then \
		echo "make release: VERSION=$(VERSION), but the file VERSION says $$want: release that (make release VERSION=$$want) or bump the file, the manifests and the docs (go test ./internal/release says where)"; exit 2; fi
	@if [ -n "$$(git status --porcelain 2>/dev/null)" ] && [ -z "$(ALLOW_DIRTY)" ]; then \
		echo "make release: the tree has uncommitted changes (ALLOW_DIRTY=1 to build anyway)"; exit 2; fi
	rm -rf $(DIST)
	@mkdir -p $(DIST)
	@set -e; for name in $(BINARIES); do for p in $(RELEASE_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; out=$(DIST)/$$name-$(VERSION)-$$os-$$arch; \
		echo "build $$p -> $$out"; $(STATIC_BUILD); \
	done; done
	@set -e; for name in $(BINARIES); do bins=""; for p in $(IMAGE_PLATFORMS); do \
		bins="$$bins --binary $$p=$(DIST)/$$name-$(VERSION)-$${p%/*}-$${p#*/}"; done; \
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(GO) run ./cmd/mkimage --name $$name --version $(VERSION) --out $(DIST)/image $$bins; \
	done
	@cd $(DIST) && if command -v sha256sum >/dev/null; then sum="sha256sum"; else sum="shasum -a 256"; fi; \
		$$sum coordctl-* coordkit-sidecar-* image/*.tar > SHA256SUMS && cat SHA256SUMS

## test: what CI runs: go vet and every test with the race detector, side by
## side (go vet runs in the background while the tests, mostly waiting on
## timers and leases, run; -vet=off because the full vet runs anyway). First
## it builds the binaries the end-to-end tests run (make testbin: the
## release's static build, without the race detector; internal/testbin).
## The packages run mostly waiting, not computing: on a 2-core machine their
## tests took 992 s of wall time and 277 s of CPU one package after another
## (measured with helpers' builds beside them). So -p 4 packages at a time,
## the longest first (TEST_FIRST, longest-processing-time order: the
## package that takes longest must not start last), and -parallel 8 tests
## within one. -timeout bounds one package. -trimpath (vet's too): without
## it the build cache keys every package by its directory, so a fresh clone
## recompiled all of coordkit with -race (make test from a new clone: 326-380
## s, the same tree a second time 248 s).
TEST_FLAGS ?= -race -trimpath -count=1 -vet=off -parallel 8 -p 4 -timeout 15m
TEST_FIRST := ./internal/safety ./internal/cmd/e2e ./fencing/sqlfence ./internal/image ./session \
	./internal/cmd/root ./internal/bench/lockbench ./internal/bench/scalebench ./scenarios \
	./internal/etcdembed ./internal/childproc ./cluster ./internal/bench/rwlockbench ./internal/cmd/sql \
	./lock ./internal/labweb ./internal/etcddial ./internal/pglock ./internal/cmd/agent
test:
	@$(GO) vet -trimpath $(PKGS) & vet=$$!; \
	$(MAKE) -s testbin TESTBIN=$(CURDIR)/bin/test && \
	COORDKIT_TEST_BIN=$(CURDIR)/bin/test $(GO) test $(TEST_FLAGS) $(TEST_FIRST) $(PKGS); t=$$?; \
	wait $$vet; v=$$?; \
	if [ $$v -ne 0 ]; then echo "make test: go vet failed"; fi; \
	[ $$t -eq 0 ] && [ $$v -eq 0 ]

test-short:
	$(GO) test -short -count=1 $(PKGS)

## demo: the main job on an embedded etcd, explained as it happens.
demo: build
	./bin/coordctl demo

## bench: side-by-side benchmarks against the anchors (etcd concurrency, bare raft).
bench: build
	./bin/coordctl bench lock
	./bin/coordctl bench rwlock
	./bin/coordctl bench sem
	./bin/coordctl bench elect
	./bin/coordctl bench lab
	./bin/coordctl bench lab --model
	./bin/coordctl bench sql
	./bin/coordctl bench scale --quick

## scenarios: every experiment of the scenarios registry, with its verdicts.
scenarios: build
	./bin/coordctl scenario run --all

## check-long: Jepsen-style safety checks on a three-member etcd, 10 seeds x 60 s per check
## and mode (about 40 minutes); each prints a row per seed and a summary line. Then the
## unfenced lock's lost update shrunk to its smallest fault schedule (a few minutes).
check-long: build
	./bin/coordctl check lock-safety --seeds 1..10 --duration 60s
	./bin/coordctl check lock-safety --seeds 1..10 --duration 60s --no-fencing
	./bin/coordctl check election-safety --seeds 1..10 --duration 60s
	./bin/coordctl check election-safety --seeds 1..10 --duration 60s --no-fencing
	./bin/coordctl check lock-safety --no-fencing --duration 20s --seed 3 --shrink

## figure16: the Raft paper's Figure 16 in the lab (about 70 minutes on a loaded 2-core
## machine): 1000 leader crashes per election-timeout range, 200 for 12-24 ms, pre-vote off
## and on; the chart to docs/figure16.svg (percentiles against T: figure16-curve.svg), the
## tables to docs/figure16.txt. Resumable: the
## trials are kept in bin/figure16.jsonl and a rerun skips those already measured.
figure16: build
	./bin/coordctl lab figure16 --trials 1000 --trials-at 12ms=200 --results bin/figure16.jsonl \
		--csv bin/figure16.csv --svg docs/figure16.svg | tee docs/figure16.txt
	./bin/coordctl lab sweep --experiment election --param prevote=off,on --param timeout=25ms,50ms,100ms,150ms \
		--set nodes=5 --set delay=7.5ms --set lagging=2 --seeds 1..1000 --results bin/figure16.jsonl \
		--report-only --curve timeout --svg docs/figure16-curve.svg > /dev/null

## lab: the Raft lab with its live page on http://127.0.0.1:7071/ (and the shell here).
lab: build
	./bin/coordctl lab --nodes 5 --http 127.0.0.1:7071

## lab-screenshot: regenerate docs/lab-web.png with headless Chromium (the browser test).
lab-screenshot:
	LAB_SCREENSHOT=$(CURDIR)/docs/lab-web.png $(GO) test -count=1 -run TestBrowserCrashPartitionHeal ./internal/labweb

## lint: gofmt, go vet and staticcheck.
lint:
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) $(PKGS)

clean:
	rm -rf bin dist coordctl.etcd coordctl.resource

## fuzz: each fuzz test of the parsers that read untrusted input (the resource's
## log recovery, the Fencing-Token/Fencing-Scope headers, the lamport event
## file) for FUZZTIME each; the seed corpora are in testdata/fuzz.
FUZZTIME ?= 20s
.PHONY: fuzz
fuzz:
	$(GO) test ./fencing -run '^$$' -fuzz '^FuzzReplayLog$$' -fuzztime $(FUZZTIME)
	$(GO) test ./fencing -run '^$$' -fuzz '^FuzzReplayFrames$$' -fuzztime $(FUZZTIME)
	$(GO) test ./fencing -run '^$$' -fuzz '^FuzzFencingHeaders$$' -fuzztime $(FUZZTIME)
	$(GO) test ./lamport -run '^$$' -fuzz '^FuzzParseSteps$$' -fuzztime $(FUZZTIME)
