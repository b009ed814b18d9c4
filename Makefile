# tierbench — `make help` lists the targets.
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
# A package's tests may run past go test's default 10 minutes: RUBiS's,
# under the race detector on two cores, take 9–10 minutes on their own.
TEST_TIMEOUT ?= 30m

.PHONY: help build install docs test test-long test-rest test-race test-all bench bench-pgbench bench-pgfloor bench-container bench-rubis style-sizes lint proto proto-tools clean

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## build bin/tierbench
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/tierbench ./cmd/tierbench

install: ## go install tierbench into GOBIN (default: GOPATH/bin), its version stamped as make build's
	$(GO) install -ldflags "$(LDFLAGS)" ./cmd/tierbench

# The CLI reference and the result file's schema are generated from the
# code; cmd/tierbench's TestDocsAreWhatTheCodeGenerates fails when the
# committed ones differ.
docs: ## regenerate docs/cli/*.md (the commands' reference) and docs/result.schema.json
	$(GO) run ./cmd/tierbench docs docs

# make test is the README's test command: every package against the real
# databases, broker and browser, in about 6 minutes on two idle cores
# (373 s measured 2 December 2026; its target is 5: docs/testing.md).
# The long tests (servers and tiers killed mid-run, soaks, every cell of a
# matrix: testsvc.SkipUnlessLong, storetest.ShareCell) skip unless
# TIERBENCH_LONG=1, which make test-all sets. The tests that wait on the
# databases, runs and child processes run four at a time within their
# package (testsvc.MainWaiting). docs/testing.md has the measured times.
test: ## go vet, then every package's tests, the long ones skipped: ~6 min on 2 idle cores (373 s measured; target 5) (servers from TIERBENCH_TEST_*; unreachable ones skip unless TIERBENCH_REQUIRE_SERVICES=1)
	$(GO) vet ./...
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...

# make test-all is what make test leaves out, so that CI runs make test
# (the README's command) and then make test-all, each test once: the long
# tests and the matrix cells make test skipped (TIERBENCH_LONG=rest; the
# tests internal/testsvc/longtests finds), then the race run.
test-all: ## the long tests make test leaves out, then the race run: ~20 min on 2 idle cores (CI runs make test, then this)
	$(MAKE) test-rest
	$(MAKE) test-race

# test-rest and test-race skip go test's own vet (-vet=off): they come
# after make test, whose go vet ./... checked the same code with every
# analyzer, and under -race go test would vet every package again.
test-rest: ## only the long tests and matrix cells make test skips (TIERBENCH_LONG=rest): ~9 min on 2 idle cores
	TIERBENCH_LONG=rest $(GO) test -count=1 -vet=off -timeout $(TEST_TIMEOUT) $$($(GO) run ./internal/testsvc/longtests)

test-long: ## every test whole, the long ones included (TIERBENCH_LONG=1), in one go: ~10 min on 2 idle cores
	TIERBENCH_LONG=1 $(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...

# Under the race detector each test runs on SQLite alone (-short skips the
# PostgreSQL and MariaDB backends and the private servers): the detector
# watches tierbench's goroutines, which are the same whichever database
# answers, and make test runs every backend. -short runs every cell of a
# matrix on SQLite (storetest.ShareCell); the long fault tests, which kill
# processes rather than race goroutines, are make test-rest's, without the
# detector, to keep CI within its 30 minutes. cmd/tierbench's tests drive child processes
# of a binary built without -race, so they are make test's; internal/report
# starts no goroutine of its own (it renders pages, its tests drive a
# browser), so the detector has nothing there to watch.
test-race: ## every test under the race detector, on SQLite (needs cgo and a C compiler): ~12 min on 2 idle cores
	$(GO) test -count=1 -vet=off -race -short -timeout $(TEST_TIMEOUT) $$($(GO) list ./... | grep -v -e '/cmd/tierbench$$' -e '/internal/report$$')

bench: ## Go benchmarks: driver overhead, histograms, container cache hit
	$(GO) test -run '^$$' -bench . -benchmem ./internal/driver/ ./internal/metrics/ ./internal/container/

bench-pgbench: build ## tierbench direct vs pgbench on PostgreSQL (env: DSN CLIENTS SECONDS_PER_RUN ROUNDS SWITCHES=1 counts client context switches, OP=NAME one transaction alone)
	BIN=./bin/tierbench bench/pgbench/run.sh

bench-pgfloor: build ## the Go floor: pgbench vs a bare pgconn client, one script alone (env: DSN CLIENTS SECONDS_PER_RUN ROUNDS SWITCHES=1 SCRIPT=query_by_id.sql)
	BIN=./bin/tierbench bench/pgbench/floor.sh

bench-container: build ## Stock-Online on the container (C-cmp, A-exclusive) vs direct SQL (env: DSN ROUNDS ITERATIONS CLIENTS)
	BIN=./bin/tierbench bench/container/run.sh

bench-rubis: build ## RUBiS pages/s: wrk vs tierbench drive on ViewItem and a search (env: DSN SCALE CONNS SECONDS_PER_RUN ROUNDS THREADS)
	BIN=./bin/tierbench bench/rubis/run.sh

style-sizes: ## the RUBiS styles' code sizes beside the seed's table (docs/cecchet-styles.md)
	$(GO) run ./internal/workloads/rubis/stylesizes

lint: ## gofmt and go vet
	@test -z "$$(gofmt -l .)" || { gofmt -l .; echo "gofmt would change the files above"; exit 1; }
	$(GO) vet ./...

# The remote interfaces are declared once, in .proto files; the generated Go
# is committed, and CI checks it is what these tools generate.
PROTOC_VERSION     ?= 3.21.12
PROTOC_GEN_GO      ?= v1.36.12
PROTOC_GEN_GO_GRPC ?= v1.6.2
GOBIN_DIR          := $(shell $(GO) env GOPATH)/bin

proto-tools: ## install protoc (Debian's protobuf-compiler) and the pinned Go generators
	@command -v protoc >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq protobuf-compiler >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq protobuf-compiler >/dev/null; }
	@protoc --version | grep -qx 'libprotoc $(PROTOC_VERSION)' || \
	  { echo "protoc $$(protoc --version): the generated code is committed from libprotoc $(PROTOC_VERSION) (its version is in every .pb.go); install that one"; exit 1; }
	$(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO)
	$(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC)

proto: ## regenerate the Go of every .proto (see proto-tools)
	PATH="$(GOBIN_DIR):$$PATH" $(GO) generate $$(grep -rl --include=gen.go 'go:generate protoc' . | xargs -n1 dirname | sort -u)

clean: ## remove build output and default result files
	rm -rf bin results
