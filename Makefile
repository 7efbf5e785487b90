# Tabula's developer entry points. `make help` lists them.

GO        ?= go
BIN       ?= bin
TEST_TIMEOUT ?= 45m
DENSITY_COUNT ?= 3

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

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

E2E_BIN ?= $(BIN)/e2e
KUBE_VERSION_FLAGS := -X k8s.io/component-base/version.gitVersion=v1.35.4 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=35 -X k8s.io/component-base/version.gitTreeState=clean
E2E_SRC := conformance/testdata/e2e

# e2e.test and ginkgo, from the module proxy; rebuilt only when the pins change.
$(E2E_BIN)/e2e.test: $(E2E_SRC)/go.mod $(E2E_SRC)/go.sum
	@mkdir -p $(E2E_BIN)
	cd $(E2E_SRC) && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 $(GO) test -c -o $(abspath $(E2E_BIN))/e2e.test k8s.io/kubernetes/test/e2e
	cd $(E2E_SRC) && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 $(GO) build -o $(abspath $(E2E_BIN))/ginkgo github.com/onsi/ginkgo/v2/ginkgo
	cd $(E2E_SRC) && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 $(GO) build -ldflags "$(KUBE_VERSION_FLAGS)" -o $(abspath $(E2E_BIN))/kubectl k8s.io/kubernetes/cmd/kubectl

.PHONY: e2e
e2e: $(E2E_BIN)/e2e.test ## Kubernetes' e2e [sig-api-machinery] specs on Tabula (DB=sqlite|postgres|mariadb, PROCS=4; SERVER=kube for kube-apiserver+etcd; SET=beyond for other SIGs' API-only [Conformance] specs) with kube-controller-manager beside it; compares with conformance/testdata/e2e/expected-pass.txt
	@mkdir -p $(BIN); E2E_BIN=$(abspath $(E2E_BIN)) E2E_DB=$(or $(DB),sqlite) E2E_PROCS=$(or $(PROCS),4) E2E_SERVER=$(or $(SERVER),tabula) E2E_SET=$(or $(SET),api-machinery) \
	$(GO) test -count=1 -timeout 240m -run '^$$' -bench '^BenchmarkE2E$$' -benchtime 1x ./conformance > $(BIN)/e2e.log 2>&1; st=$$?; \
	grep -v -e '^=== RUN' $(BIN)/e2e.log; exit $$st

COMPARE_BIN ?= $(BIN)/compare
KINE_VERSION := v0.17.5
# kine as k3s builds it: cgo SQLite (gcc) with its release's build tags.
KINE_TAGS := nats,sqlite_unlock_notify,sqlite_vtable,sqlite_stat4,sqlite_preupdate_hook,sqlite_math_functions,sqlite_dbstat,sqlite_column_metadata

# The upstream servers bench-compare runs, from the module proxy; rebuilt
# only when their pins change.
$(COMPARE_BIN)/kube-apiserver: conformance/testdata/cluster/go.mod conformance/testdata/cluster/go.sum
	@mkdir -p $(COMPARE_BIN)
	cd conformance/testdata/cluster && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 $(GO) build -ldflags "$(KUBE_VERSION_FLAGS)" -o $(abspath $(COMPARE_BIN))/ k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager

$(COMPARE_BIN)/etcd: conformance/testdata/etcd/go.mod conformance/testdata/etcd/go.sum
	@mkdir -p $(COMPARE_BIN)
	cd conformance/testdata/etcd && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 $(GO) build -o $(abspath $(COMPARE_BIN))/etcd .

$(COMPARE_BIN)/kine-$(KINE_VERSION):
	@mkdir -p $(COMPARE_BIN)/kine.d
	cd $(COMPARE_BIN) && GOWORK=off GOBIN=$(abspath $(COMPARE_BIN))/kine.d CGO_ENABLED=1 $(GO) install -tags $(KINE_TAGS) github.com/k3s-io/kine@$(KINE_VERSION)
	mv $(COMPARE_BIN)/kine.d/kine $@ && rmdir $(COMPARE_BIN)/kine.d && ln -sf kine-$(KINE_VERSION) $(COMPARE_BIN)/kine

.PHONY: bench-compare
bench-compare: $(COMPARE_BIN)/kube-apiserver $(COMPARE_BIN)/etcd $(COMPARE_BIN)/kine-$(KINE_VERSION) ## Side by side: Tabula, kube-apiserver+etcd and kube-apiserver+kine (SQLite), fresh in turn, same tabula-bench workloads (COUNT=3 runs, SERVERS=…, BENCH_ARGS=tabula-bench flags, PIN=SERVER:LOAD CPU lists); table in bin/bench-compare.md
	$(GO) build -o $(COMPARE_BIN)/tabula-bench ./cmd/tabula-bench
	@COMPARE_BIN=$(abspath $(COMPARE_BIN)) COMPARE_COUNT=$(or $(COUNT),3) COMPARE_SERVERS=$(SERVERS) COMPARE_ARGS="$(BENCH_ARGS)" COMPARE_PIN=$(PIN) COMPARE_OUT=$(abspath $(BIN))/bench-compare.md COMPARE_RAW=$(abspath $(BIN))/bench-compare \
	$(GO) test -count=1 -timeout 240m -run '^$$' -bench '^BenchmarkCompare$$' -benchtime 1x ./conformance > $(BIN)/bench-compare.log 2>&1; st=$$?; \
	grep -E '^(Benchmark|ok|FAIL|---)' $(BIN)/bench-compare.log; cat $(BIN)/bench-compare.md 2>/dev/null; exit $$st

.PHONY: bench-scaleout
bench-scaleout: ## Scale-out on PostgreSQL: 1, 2 and 4 Tabula replicas on one database, without and with a hot standby (SCALEOUT_REPLICAS=…, SCALEOUT_STANDBY=0,1, SCALEOUT_ARGS=tabula-bench flags); table in bin/bench-scaleout.md
	@mkdir -p $(COMPARE_BIN)
	$(GO) build -o $(COMPARE_BIN)/tabula-bench ./cmd/tabula-bench
	@COMPARE_BIN=$(abspath $(COMPARE_BIN)) SCALEOUT_OUT=$(abspath $(BIN))/bench-scaleout.md COMPARE_RAW=$(abspath $(BIN))/bench-scaleout \
	$(GO) test -count=1 -timeout 240m -run '^$$' -bench '^BenchmarkScaleOut$$' -benchtime 1x ./conformance > $(BIN)/bench-scaleout.log 2>&1; st=$$?; \
	grep -E '^(Benchmark|ok|FAIL|---)' $(BIN)/bench-scaleout.log; cat $(BIN)/bench-scaleout.md 2>/dev/null; exit $$st

.PHONY: bench-scale
bench-scale: $(COMPARE_BIN)/kube-apiserver $(COMPARE_BIN)/etcd ## A million objects: load, pages, selectors, gets, watches, memory, database size, restart and compaction on each of SCALE_SERVERS (tabula-sqlite,tabula-postgres,kube-etcd), beside the same at SCALE_BASELINE (10000); SCALE_OBJECTS=…; table in bin/bench-scale.md
	@COMPARE_BIN=$(abspath $(COMPARE_BIN)) SCALE_OUT=$(abspath $(BIN))/bench-scale.md \
	$(GO) test -count=1 -timeout 480m -run '^$$' -bench '^BenchmarkScale$$' -benchtime 1x ./conformance > $(BIN)/bench-scale.log 2>&1; st=$$?; \
	grep -E '^(Benchmark|ok|FAIL|---)' $(BIN)/bench-scale.log; cat $(BIN)/bench-scale.md 2>/dev/null; exit $$st

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
