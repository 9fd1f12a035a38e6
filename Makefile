# Junction — the two commands a newcomer needs are `make run` and `make test`.
GO        ?= go
BIN       := bin/junction
SHARED    ?= ../shared
GOFLAGS   ?=
export GOFLAGS

.PHONY: all build run run-example test vet fmt-check fuzz bench models-lexical plugins clean help

all: build

## build: compile the junction binary into bin/
build:
	$(GO) build -o $(BIN) ./cmd/junction

## run: serve the built-in default recipe with the in-process demo backend on 127.0.0.1:8801
run: build
	$(BIN) serve

## run-example: serve ../shared/spec/example-config.yaml with demo backends on its ports 18001-18003
run-example: build
	@set -e; \
	$(BIN) demo-backend --listen 127.0.0.1:18001 & p1=$$!; \
	$(BIN) demo-backend --listen 127.0.0.1:18002 & p2=$$!; \
	$(BIN) demo-backend --listen 127.0.0.1:18003 & p3=$$!; \
	trap "kill $$p1 $$p2 $$p3 2>/dev/null" EXIT INT TERM; \
	$(BIN) serve --config $(SHARED)/spec/example-config.yaml

## test: vet, formatting and the whole suite under the race detector (fuzz targets run their seed corpus)
test: vet fmt-check
	@# wazero compiles ~20x slower under -race: run the plugin host tests once without it first, which
	@# compiles the test plugin modules into the shared cache (see docs/plugins.md)
	$(GO) test -count=1 ./hostapi/... ./engine/plugin/wasm/
	$(GO) test -race -count=1 ./...
	# Plugin modules in the wasm host (built-ins, junction plugin): wazero compiles a Go module in
	# seconds natively but about thirty under -race, so these run without it.
	$(GO) test -count=1 ./plugins/builtin/
	$(GO) test -count=1 -run 'TestServeBuiltinWasmPlugins|TestPluginCommands|TestPluginPreviewBuiltin|TestExamplePlugins' ./cmd/junction/

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

## fuzz: run each fuzz target for FUZZTIME (default 30s)
FUZZTIME ?= 30s
fuzz:
	$(GO) test -run=^$$ -fuzz=FuzzParse -fuzztime=$(FUZZTIME) ./recipes/
	$(GO) test -run=^$$ -fuzz=FuzzChatParse -fuzztime=$(FUZZTIME) ./engine/chat/
	$(GO) test -run=^$$ -fuzz=FuzzGateway -fuzztime=$(FUZZTIME) ./engine/gateway/
	$(GO) test -run=^$$ -fuzz=FuzzEventScanner -fuzztime=$(FUZZTIME) ./engine/dataplane/
	$(GO) test -run=^$$ -fuzz=FuzzMessageSequences -fuzztime=$(FUZZTIME) ./engine/extproc/
	$(GO) test -run=^$$ -fuzz=FuzzScanner -fuzztime=$(FUZZTIME) ./plugins/internal/chatmsg/

## bench: routing-decision micro-benchmarks, the gateway and the ext_proc load runs (see docs/benchmarks.md)
bench: build
	$(GO) test -run=^$$ -bench=. -benchmem -count=1 ./engine/ ./engine/decision/ ./engine/signal/...
	$(GO) test -run=^$$ -bench='PluginCall' -benchtime=40x -count=1 ./engine/plugin/wasm/
	$(GO) test -run=^$$ -bench='Chain' -benchtime=20000x -count=1 ./engine/plugin/wasm/
	$(GO) test -run=^$$ -bench='Load' -benchtime=3x -count=1 ./engine/plugin/wasm/
	$(GO) test -run=^$$ -bench='Call' -benchtime=20000x -count=1 ./hostapi/
	$(GO) test -run=^$$ -bench=BenchmarkStage -benchtime=3000x -count=5 ./plugins/builtin/
	$(GO) run ./cmd/junction-bench
	$(GO) test -run=^$$ -bench=. -benchmem -count=1 ./engine/extproc/
	$(GO) run ./cmd/junction-extproc-bench

## plugins: rebuild the built-in plugin modules (plugins/*/guest) into plugins/builtin/modules, reproducibly,
##          and the example third-party plugins (examples/plugins/*/*.wasm, whose sha256 recipe.yaml pins)
plugins:
	$(GO) run ./plugins/builtin/gen
	$(GO) run ./cmd/junction plugin build examples/plugins/piiredact
	$(GO) run ./cmd/junction plugin build examples/plugins/langprompt

## models-lexical: retrain the lexical fallback classifiers from ../shared/data
models-lexical:
	$(GO) run ./cmd/junction-train-lexical -data $(SHARED)/data

clean:
	rm -rf bin

help:
	@grep -E '^## ' Makefile | sed 's/^## //'
