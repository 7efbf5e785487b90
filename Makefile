# Tabula's developer entry points. `make help` lists them.

GO        ?= go
BIN       ?= bin
TEST_TIMEOUT ?= 45m
DENSITY_COUNT ?= 3

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build the tabula binary into bin/ (static: pure-Go SQLite, no cgo)
	CGO_ENABLED=0 $(GO) build -o $(BIN)/tabula ./cmd/tabula

.PHONY: run
run: build ## Run Tabula on its embedded SQLite default (./tabula-data); flags in ARGS='--listen … --data-dir …'
	$(BIN)/tabula serve $(ARGS)

.PHONY: install
install: ## Install the static tabula binary into $(go env GOBIN), or $(go env GOPATH)/bin
	CGO_ENABLED=0 $(GO) install ./cmd/tabula

.PHONY: test
test: ## Run every test: SQLite, PostgreSQL and MariaDB (started by the tests), kubectl and client-go
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...

.PHONY: conformance
conformance: ## Run the kubectl/client-go conformance suite and print its scenario and seed-section matrices
	@mkdir -p $(BIN); $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -v ./conformance > $(BIN)/conformance.log 2>&1; st=$$?; \
	grep -v -e '^=== RUN' -e '^=== PAUSE' -e '^=== CONT' $(BIN)/conformance.log; exit $$st

.PHONY: density
density: ## Density benchmark (DENSITY_COUNT runs, 3): kcm, kube-scheduler and 100 kwok nodes run 3,000 pods on kube-apiserver+etcd and on Tabula (SQLite, PostgreSQL)
	@mkdir -p $(BIN); $(GO) test -timeout 180m -run '^$$' -bench '^BenchmarkDensity$$' -benchtime 1x -count $(DENSITY_COUNT) ./conformance > $(BIN)/density.log 2>&1; st=$$?; \
	grep -E '^(Benchmark|ok|FAIL|---)|density_test.go' $(BIN)/density.log; exit $$st

.PHONY: check
check: ## go vet, gofmt, and the in-process tests under the race detector (conformance runs separate processes)
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) test -count=1 -race -timeout $(TEST_TIMEOUT) $$($(GO) list ./... | grep -v /conformance)

.PHONY: generate
generate: ## Regenerate committed generated code (OpenAPI definitions)
	$(GO) generate ./...

.PHONY: fuzz
fuzz: ## Run each fuzz target briefly (FUZZTIME, default 20s)
	@for pkg in ./codecs ./apply ./server; do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			$(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $${FUZZTIME:-20s} $$pkg || exit 1; \
		done; \
	done

.PHONY: clean
clean: ## Remove build output and the default data directory
	rm -rf $(BIN) tabula-data
