# Herald — see README.md.
GO      ?= go
BIN     ?= bin/herald
PKGS    ?= ./...
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS := -X main.buildVersion=$(VERSION) -X main.buildCommit=$(COMMIT)

.PHONY: build run test test-go test-ts bridge-ts test-short bench bench-quick bench-go lint deadcode deps fmt devmail clean fuzz

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/herald

# The development loop's settings: a .env file beside this Makefile, one
# HERALD_NAME=value a line (no quotes, no spaces around =; # comments), is
# read by make run and make devmail and exported to herald. herald itself
# never reads .env: in production the environment is the service
# manager's. It is git-ignored.
-include .env
export $(shell sed -n 's/^[[:space:]]*\(HERALD_[A-Z0-9_]*\)[[:space:]]*=.*/\1/p' .env 2>/dev/null)

## run: herald serve on the embedded default (./herald-data, 127.0.0.1:8080);
## ARGS adds flags, e.g. make run ARGS="--public-url http://127.0.0.1:8080"
run: build
	./$(BIN) serve $(ARGS)

## devmail: the development SMTP catcher (127.0.0.1:1025, UI on :8025)
devmail: build
	./$(BIN) devmail

## test: lint, the TypeScript SDK's tests, then every test with the race
## detector. TESTP test binaries at once, four parallel tests of a package
## at once (many wait on timers, the clock or a browser, not on the CPU).
## The longest packages start first (SLOW): the run ends when the last one does.
## -vet=off: lint has just run all of go vet, on the race detector's build
## of every package, which the tests then reuse. -ldflags=-w: no DWARF in
## the ~60 test binaries, linked anew on every run (a third of each link's
## time; stack traces and race reports do not use it). GORACE's
## atexit_sleep_ms: the race runtime waits a second before each test binary
## exits, in case a goroutine still running reports a race; the tests stop
## their goroutines in their cleanups, so 100 ms is plenty, and ~60
## binaries give back a second each.
TESTP ?= 4
SLOW  := ./service ./engine ./httpapi ./cmd/herald ./cmd/herald/internal/bench ./webhooks ./delivery ./examples/bridge ./eventlog ./sdk/typescript ./projections ./control ./retention
TESTPKGS = $(if $(filter ./...,$(PKGS)),$(SLOW) ./...,$(PKGS))
test: lint test-ts
	@$(MAKE) --no-print-directory test-go

## test-go: every Go test with the race detector, without lint and test-ts
test-go:
	GORACE="atexit_sleep_ms=100 $(GORACE)" $(GO) test -race -count=1 -vet=off -ldflags=-w -p $(TESTP) -parallel 4 -timeout 12m $(TESTPKGS)

## test-ts: the TypeScript SDK (sdk/typescript, needs Node ≥ 20 and npm):
## npm ci from its lockfile (when node_modules is older), the type check and Node's test runner (the
## shared wire fixtures included), then the packed tarball installed into an
## empty project, where a consumer's types must compile.
test-ts:
	cd sdk/typescript && { [ node_modules/.package-lock.json -nt package-lock.json ] || \
	  npm ci --no-audit --no-fund --prefer-offline --loglevel=error; } && npm test && ./scripts/pack-check.sh

## bridge-ts: the TypeScript example Bridge (examples/typescript) on
## 127.0.0.1:4000, next to `make run`; HERALD_SIGNING_SECRET is the secret
## PUT /v1/bridge returned.
bridge-ts:
	cd sdk/typescript && npm ci --no-audit --no-fund --prefer-offline --loglevel=error && npm run build
	cd examples/typescript && npm ci --no-audit --no-fund --prefer-offline --loglevel=error && npm start

## test-short: without the race detector, for a quick loop
test-short:
	$(GO) test -count=1 -timeout 10m $(PKGS)

## bench: the end-to-end benchmark, herald bench (herald serve as a child
## process, a Bridge, an SMTP sink; both sync modes; takes a while).
## BENCH_FLAGS adds flags, e.g. BENCH_FLAGS="--json --sizes 1000,10000".
bench: build
	./$(BIN) bench $(BENCH_FLAGS)

## bench-quick: herald bench --quick (smaller sizes, a few minutes)
bench-quick: build
	./$(BIN) bench --quick $(BENCH_FLAGS)

## bench-go: Go benchmarks of the hot paths
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem -timeout 30m $(PKGS)

## lint: gofmt, go vet (on the race detector's build, which make test reuses),
## the import rules (deps) and deadcode
lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet -race $(PKGS)
	@$(MAKE) --no-print-directory deps deadcode

## deps: the import rules of docs/architecture.md, one check each
## (internal/importrules holds them, word for word as the page states
## them). The rules bind the packages' code, not their tests.
deps:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(GO) build -o "$$tmp/importrules" ./internal/importrules; \
	$(GO) list -deps -json ./... > "$$tmp/graph.json"; \
	check() { "$$tmp/importrules" -graph "$$tmp/graph.json" -rule "$$1" || status=1; }; status=0; \
	check bridge-self-contained;   `# bridge/... depends on nothing of ours outside bridge/...` \
	check bridge-no-nats;          `# bridge/... depends on no NATS package` \
	check runstate-no-nats;        `# runstate depends on no NATS package` \
	check service-imports-httpapi; `# only service imports httpapi` \
	check cmd-imports-service;     `# only cmd/herald, internal/testherald and internal/testchild import service` \
	check httpapi-not-engine;      `# httpapi imports neither engine nor runstate` \
	check edge-imports-control;    `# only httpapi and service import control` \
	check control-not-engine;      `# control depends on nothing of the engine's` \
	check engine-not-control;      `# engine depends on nothing of control's` \
	check delivery-not-engine;     `# delivery/... depends on neither engine nor control` \
	check delivery-core-no-providers; `# delivery imports no provider package: service passes the registry in` \
	exit $$status

## deadcode: functions no program of the module (cmd/herald, examples/bridge)
## reaches, less the justified exceptions in deadcode.allow. The tool is
## golang.org/x/tools/cmd/deadcode at the version go.mod pins (its tool
## directive; update with go get -tool golang.org/x/tools/cmd/deadcode@vX).
deadcode:
	@set -e; raw=$$(mktemp); out=$$(mktemp); allow=$$(mktemp); trap 'rm -f "$$raw" "$$out" "$$allow"' EXIT; \
	$(GO) tool deadcode -f '{{range .Funcs}}{{printf "%s: unreachable func %s.%s\n" .Position $$.Path .Name}}{{end}}' ./... > "$$raw"; \
	sed 's| github.com/heraldhq/herald/| |' "$$raw" > "$$out"; \
	sed -e '/^[[:space:]]*#/d' -e '/^[[:space:]]*$$/d' -e 's/.*/unreachable func (&)$$/' deadcode.allow > "$$allow"; \
	status=0; \
	dead=$$(grep -v -E -f "$$allow" "$$out" || true); \
	if [ -n "$$dead" ]; then \
	  echo "deadcode: unreachable from every program of the module:"; echo "$$dead"; \
	  echo "Delete each one. A helper only tests use goes in a _test.go file of its package (export_test.go"; \
	  echo "for an external test package) or in internal/test*; a true exception goes in deadcode.allow with its reason."; \
	  status=1; \
	fi; \
	while read -r entry; do \
	  if ! grep -q -E -e "$$entry" "$$out"; then \
	    e=$${entry#unreachable func (}; echo "deadcode.allow: $${e%)\$$} matches nothing; delete it"; status=1; \
	  fi; \
	done < "$$allow"; \
	exit $$status

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin herald-data

## fuzz: every Fuzz target of the module, FUZZTIME each (default 100000x; CI
## runs 20000x each; compiling the fuzzing binaries takes most of that). A crasher is written under the
## package's testdata/fuzz and fails the run. A count (Nx), not a duration:
## with a duration, Go before 1.27 may fail a target that found nothing
## with "context deadline exceeded" as the time runs out (golang/go#75804).
FUZZTIME ?= 100000x
fuzz:
	@set -e; grep -rl --include='*_test.go' '^func Fuzz' . | while read -r file; do \
	  for f in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$file); do \
	    echo "fuzz $$(dirname $$file) $$f ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) ./$$(dirname $$file); \
	  done; \
	done
