# hookinbox: `make run` starts the whole local stack, `make test` runs every test.
# Both build what they need (the binary, the Temporal CLI and Mailpit) themselves.

SHELL   := /bin/bash
GO      ?= go
BIN     := .tools/bin/hookinbox
LAB     := .tools/bin/hookinbox-lab
SOAKBIN := .tools/bin/hookinbox-soak
PKGS    := ./...

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@echo "hookinbox make targets:"
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build the hookinbox binary into .tools/bin/hookinbox
	@mkdir -p .tools/bin
	$(GO) build -o $(BIN) ./cmd/hookinbox

.PHONY: lab
lab: build ## Build the harness binary (simulate, soak, bench, demo) into .tools/bin/hookinbox-lab, and the soak's service binary (hookinbox-soak) beside it
	$(GO) build -o $(LAB) ./cmd/hookinbox-lab
	$(GO) build -o $(SOAKBIN) ./cmd/hookinbox-soak

.PHONY: tools
tools: build ## Build the pinned Temporal CLI, Mailpit, stripe-mock and amtool, and fetch the pinned GitHub example payloads (npm), into .tools/ (once per machine, a few minutes)
	$(BIN) dev --tools-only

.PHONY: run
run: build ## Run the local stack: PostgreSQL, Temporal dev server + UI, Mailpit, intake, worker
	$(BIN) dev

# lab/release is the released-module test: make test runs it once, verbosely, as test-released.
RELEASE_PKG := github.com/hookinbox/hookinbox/lab/release
.PHONY: test
test: tools compose-check chart-check ## Vet and run every test: unit, integration, end-to-end, the upgrade, and every team module in examples/ built outside the tree against the released version (test-released; real PostgreSQL and Temporal)
	$(GO) vet $(PKGS)
	$(GO) test -count=1 -timeout 60m $$($(GO) list $(PKGS) | grep -vx '$(RELEASE_PKG)')
	$(MAKE) --no-print-directory test-released

.PHONY: test-released
test-released: tools ## Every module in examples/ copied outside the tree, requiring hookinbox at VERSION from a module proxy on disk: go mod tidy, vet and test with a fresh module cache; the cache's copy must stay unchanged (lab/release)
	$(GO) test -count=1 -timeout 75m -v $(RELEASE_PKG)

# The release an upgrade starts from (lab/soak/testdata/upgrade-from: the
# commit before this release's changes). Any ref of this repository's history.
UPGRADE_FROM ?= $(shell cat lab/soak/testdata/upgrade-from)
.PHONY: test-upgrade
test-upgrade: tools ## The upgrade with work in flight: UPGRADE_FROM runs first, is killed halfway, this build takes over the same data (part of make test)
	HOOKINBOX_UPGRADE_FROM=$(UPGRADE_FROM) $(GO) test -count=1 -timeout 30m -v -run TestUpgradeWithWorkInFlight ./lab/soak

.PHONY: compose-check
compose-check: ## Validate docker-compose.yml (docker-compose config; no engine needed), its consistency with the binary, the alert rules (promtool) and Alertmanager's configuration (amtool)
	bash scripts/compose-check.sh

.PHONY: chart-check
chart-check: ## Check the Helm chart (deploy/helm/hookinbox): helm lint and helm template with each ci/ values file, every object decoded strictly, the pods' security and each process's own role (deploy/helm/check; builds the pinned Helm once)
	cd deploy/helm/check && $(GO) vet ./... && $(GO) test -count=1 -timeout 30m ./...

.PHONY: test-e2e-postgres
test-e2e-postgres: tools temporal-server ## The e2e tests against Temporal on PostgreSQL with 4 history shards (production's shape) instead of the dev server
	HOOKINBOX_TEMPORAL_ENGINE=postgres $(GO) test -count=1 -timeout 30m ./e2e

.PHONY: test-failures
test-failures: tools ## Only the failure suite F1–F6 of SPEC, against the real stack
	$(GO) test -count=1 -v -run TestFailureSuite ./e2e

.PHONY: test-short
test-short: ## Unit tests only (no PostgreSQL or Temporal needed)
	$(GO) test -count=1 -short -skip '^Example$$' $(PKGS)

.PHONY: demo
demo: lab ## With make run going in another terminal: a misbehaving provider, then the ground truth beside what converged
	$(LAB) demo

.PHONY: soak
soak: tools lab ## Chaos soak: 20,000 events, processes killed, Temporal restarted, every invariant checked (~40 min on 2 cores)
	$(LAB) soak --binary $(SOAKBIN)

# BENCH_ENGINE=postgres: the end-to-end runs on Temporal on PostgreSQL (4 shards), see docs/benchmarks.md.
BENCH_ENGINE ?= dev
.PHONY: bench
bench: tools lab ## Benchmarks: intake vs raw INSERT; end to end and scaling, hookinbox beside hookinbox-v1 (~1 h on 2 cores; JSON in bench-results/)
	@mkdir -p bench-results
	$(LAB) bench --engine $(BENCH_ENGINE) --save bench-results/$$(date +%Y%m%d-%H%M%S).json

.PHONY: docs
docs: ## Rewrite every generated benchmark table of README.md and docs/benchmarks.md from the bench-results/ reports its marker names (hookinbox-lab bench report --write-docs; make test fails when one differs)
	$(GO) run ./cmd/hookinbox-lab bench report --write-docs

# A count, not a duration: with a duration, Go 1.26's fuzz coordinator can report a spurious
# "context deadline exceeded" failure at the end of the window (golang/go#75804, fixed in 1.27).
FUZZTIME ?= 30000x
FUZZPKGS ?= ./webhook ./internal/admission
.PHONY: fuzz
fuzz: ## Fuzz the intake and admission: FUZZTIME executions per target (default 30000x); findings land in <pkg>/testdata/fuzz
	@for p in $(FUZZPKGS); do for t in $$($(GO) test $$p -list '^Fuzz' | grep '^Fuzz'); do \
		echo "== $$p $$t"; $(GO) test $$p -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) || exit 1; done; done

.PHONY: fmt
fmt: ## Format the code
	gofmt -w $$(git ls-files '*.go')

.PHONY: clean
clean: ## Remove local state (.data: database, Temporal history, mail); keeps built tools
	rm -rf .data

LINT_VERSION := $(shell awk '$$1 == "require" && $$2 ~ /golangci-lint/ {print $$3}' tools/golangci-lint/go.mod)
WFCHECK_VERSION := $(shell awk '$$1 == "require" && $$2 ~ /workflowcheck/ {print $$3}' tools/workflowcheck/go.mod)
TSERVER_VERSION := $(shell awk '$$1 == "go.temporal.io/server" {print $$2}' tools/temporal-server/go.mod)
# Keyed by version and by the module's own source, as devenv.TemporalServer.Path.
TSERVER_SRC := tools/temporal-server/go.mod $(sort $(wildcard tools/temporal-server/*.go))
TSERVER_HASH := $(shell cat $(TSERVER_SRC) | sha256sum | cut -c1-12)
TSERVER := .tools/temporal-server-$(TSERVER_VERSION)-$(TSERVER_HASH)/temporal-server
GOLANGCI := .tools/golangci-lint-$(LINT_VERSION)/golangci-lint
WFCHECK := .tools/workflowcheck-$(WFCHECK_VERSION)/workflowcheck

$(GOLANGCI): tools/golangci-lint/go.mod
	cd tools/golangci-lint && $(GO) build -o ../../$@ github.com/golangci/golangci-lint/v2/cmd/golangci-lint

$(WFCHECK): tools/workflowcheck/go.mod
	cd tools/workflowcheck && $(GO) build -o ../../$@ go.temporal.io/sdk/contrib/tools/workflowcheck

.PHONY: temporal-server
temporal-server: $(TSERVER) ## Build the Temporal server on PostgreSQL (tools/temporal-server, the postgres engine) into .tools/
$(TSERVER): $(TSERVER_SRC)
	@mkdir -p $(dir $@)
	cd tools/temporal-server && $(GO) build -o ../../$@.tmp . && mv ../../$@.tmp ../../$@

.PHONY: lint
lint: $(GOLANGCI) $(WFCHECK) ## golangci-lint v2 (.golangci.yml) and Temporal's workflowcheck over workflows/
	$(GOLANGCI) run ./...
	$(WFCHECK) ./workflows/...
