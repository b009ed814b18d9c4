# tierbench — `make help` lists the targets.
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: help build test test-race bench bench-pgbench bench-container lint clean

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## build bin/tierbench
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/tierbench ./cmd/tierbench

test: ## go vet, then every test (servers from TIERBENCH_TEST_*; unreachable ones skip unless TIERBENCH_REQUIRE_SERVICES=1)
	$(GO) vet ./...
	$(GO) test -count=1 ./...

test-race: ## every test under the race detector (needs cgo and a C compiler)
	$(GO) test -count=1 -race ./...

bench: ## Go benchmarks: driver overhead, histograms, container cache hit
	$(GO) test -run '^$$' -bench . -benchmem ./internal/driver/ ./internal/metrics/ ./internal/container/

bench-pgbench: build ## tierbench direct vs pgbench on PostgreSQL (env: DSN CLIENTS SECONDS_PER_RUN ROUNDS)
	BIN=./bin/tierbench bench/pgbench/run.sh

bench-container: build ## Stock-Online on the container (C-cmp, A-exclusive) vs direct SQL (env: DSN ROUNDS ITERATIONS)
	BIN=./bin/tierbench bench/container/run.sh

lint: ## gofmt and go vet
	@test -z "$$(gofmt -l .)" || { gofmt -l .; echo "gofmt would change the files above"; exit 1; }
	$(GO) vet ./...

clean: ## remove build output and default result files
	rm -rf bin results
