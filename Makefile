GO ?= go
STATICCHECK_VERSION ?= v0.8.2
PKGS := ./...

.PHONY: all build test test-short demo bench lint scenarios check-long clean lab lab-screenshot

all: build

build:
	$(GO) build -o bin/coordctl ./cmd/coordctl

## test: what CI runs: go vet and every test with the race detector, side by
## side (go vet runs in the background while the tests, mostly waiting on
## timers and leases, run; -vet=off because the full vet runs anyway).
## -parallel 4: a package's parallel tests mostly wait, so four at a time keep
## the cores busy; two packages at a time (-p, the default on two cores), not
## more, so that a test's keepalives and heartbeats still get the CPU on a
## loaded machine. -timeout bounds one package (the longest takes about two
## minutes on a loaded 2-core machine).
TEST_FLAGS ?= -race -count=1 -vet=off -parallel 4 -timeout 15m
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
## and mode (about 40 minutes); each prints a row per seed and a summary line.
check-long: build
	./bin/coordctl check lock-safety --seeds 1..10 --duration 60s
	./bin/coordctl check lock-safety --seeds 1..10 --duration 60s --no-fencing
	./bin/coordctl check election-safety --seeds 1..10 --duration 60s
	./bin/coordctl check election-safety --seeds 1..10 --duration 60s --no-fencing

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
