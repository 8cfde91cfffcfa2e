GO ?= go
STATICCHECK_VERSION ?= v0.8.2
PKGS := ./...

.PHONY: all build test test-short demo bench lint scenarios check-long clean lab lab-screenshot image figure16

all: build

build:
	$(GO) build -buildvcs=auto -o bin/coordctl ./cmd/coordctl

## image: coordctl's OCI image for linux/amd64 and linux/arm64, built without a
## daemon or a registry (cmd/mkimage, internal/image): bin/image/oci (the OCI
## layout, one index) and bin/image/coordctl-linux-ARCH.tar (docker load -i).
## Static binaries (CGO_ENABLED=0, -trimpath); file and image times are
## SOURCE_DATE_EPOCH (default: the last commit's time), so the same commit
## gives the same digest.
IMAGE_DIR ?= bin/image
IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
image:
	@mkdir -p $(IMAGE_DIR)
	@set -e; bins=""; for p in $(IMAGE_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; out=$(IMAGE_DIR)/coordctl-$$os-$$arch; \
		echo "build $$p -> $$out"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -buildvcs=auto -o $$out ./cmd/coordctl; \
		bins="$$bins --binary $$p=$$out"; \
	done; \
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(GO) run ./cmd/mkimage --out $(IMAGE_DIR) $$bins

## test: what CI runs: go vet and every test with the race detector, side by
## side (go vet runs in the background while the tests, mostly waiting on
## timers and leases, run; -vet=off because the full vet runs anyway).
## -parallel 8: a package's parallel tests mostly wait (leases expiring,
## processes sleeping; internal/cmd/e2e uses about 40s of CPU in 70s), so
## eight at a time: with yes > /dev/null on the other core, e2e took 55s at 8
## and 86s at 4, internal/safety 24s and 39s, and every package with more than
## four parallel tests passed at 8. -p 3: three packages at a time on two
## cores, because even so the run uses about 1.3 cores on average (the
## packages wait more than they compute): from the same warm build cache on a
## quiet machine the whole run took 211s at -p 2 and 153s at -p 3. -timeout
## bounds one package (the longest takes about two minutes on a loaded 2-core
## machine).
TEST_FLAGS ?= -race -count=1 -vet=off -parallel 8 -p 3 -timeout 15m
test:
	@$(GO) vet $(PKGS) & vet=$$!; \
	$(GO) test $(TEST_FLAGS) $(PKGS); t=$$?; \
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
	rm -rf bin coordctl.etcd coordctl.resource

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
