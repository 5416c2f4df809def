# yarnfed: YARN Federation control plane. `make help` lists the targets.
GO ?= go
SHELL := /bin/bash
PKGS ?= ./...
# VERSION is what `yarnfed version` prints: the commit (a tag when there is
# one), "-dirty" for uncommitted changes, "dev" outside a git checkout. The
# same commit gives the same version, so the image stays reproducible.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
VERSION_LDFLAGS := -X main.version=$(VERSION)
# The one non-race build configuration: the image's (cgo off, so the binary
# is static for FROM scratch; paths trimmed, so it is reproducible). The e2e
# test binary, the tools `go run`s and the tests' builds of our commands
# (internal/gobuild, kept equal by its test) use it too, and go vet uses the
# race-built tests' objects: a build cache holds one compiled copy of a
# package per configuration, so a cold CI run compiles the dependency graph
# twice, not four times (deploy/DESIGN.md, "CI").
#
# No DWARF anywhere (-gcflags=all=-dwarf=false; the image's -s -w strips
# it anyway): panics and race reports name functions, files and lines from
# the pcln table, which stays. Measured on a cold cache it takes 10% off
# the compile (deploy/DESIGN.md, "CI").
STATIC := CGO_ENABLED=0
STATIC_FLAGS := -trimpath -buildvcs=false -gcflags=all=-dwarf=false
# The race-built test binaries' flags, DWARF off as above; -ldflags=-w
# also takes about a quarter off each link, and a cold CI run links ~90.
# compile-tests links them with these flags, so unit reuses the links; go
# vet takes them too, so it finds the objects it needs in the build cache.
RACE_FLAGS := -race -ldflags=-w -gcflags=all=-dwarf=false

.DEFAULT_GOAL := help

help: ## List the targets.
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-16s %s\n", $$1, $$2}'

build: ## Build bin/yarnfed (the server), bin/yarnfedctl, and bin/yarnfed-bench (the same with the benchmarks).
	$(GO) build -ldflags "$(VERSION_LDFLAGS)" -o bin/ ./cmd/...
	$(GO) build -tags bench -ldflags "$(VERSION_LDFLAGS)" -o bin/yarnfed-bench ./cmd/yarnfed

dev: ## Run the embedded federation on loopback (the main job).
	$(GO) run ./cmd/yarnfed dev $(DEV_ARGS)

test: ## Lint, unit tests with -race, deploy/ manifests against a real API server and a real node, and a short smoke of every fuzz target: all four at once.
	@# At once, not in turn: deploy-test mostly waits on pods and Java clients, the others
	@# mostly compute, so together they take about the longest one's time (deploy/DESIGN.md, CI).
	@# --output-sync prints each target's output whole when it ends, never interleaved.
	@$(MAKE) --no-print-directory -j4 --output-sync=target lint unit deploy-test fuzz-smoke

lint: ## gofmt and go vet.
	@bad=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$bad" ]; then echo "gofmt needed:"; echo "$$bad"; exit 1; fi
	@# RACE_FLAGS: go vet compiles the packages it checks against, and in the
	@# race-built tests' configuration those objects are already in the build cache.
	$(GO) vet $(RACE_FLAGS) $(PKGS)
	$(GO) vet $(RACE_FLAGS) -tags bench ./cmd/yarnfed/
	$(GO) vet $(RACE_FLAGS) -tags interop ./e2e/
	cd deploy/test && $(GO) vet $(RACE_FLAGS) ./...
	cd hack/image && $(GO) vet $(RACE_FLAGS) ./...
	@# Every mutation entry must still apply (a moved file or rewritten line
	@# would otherwise be found only by the next full `make mutants`).
	$(STATIC) $(GO) run $(STATIC_FLAGS) ./scripts/mutants -check

staticcheck: ## staticcheck ./... (honnef.co/go/tools, pinned in tools/go.mod); a kept finding carries //lint:ignore and its reason.
	$(GO) tool -modfile=tools/go.mod staticcheck $(PKGS)

cyclo: ## No function of internal/hadoopipc (tests aside) over gocyclo 15 (github.com/fzipp/gocyclo, pinned in tools/go.mod): split it into named steps.
	$(GO) tool -modfile=tools/go.mod gocyclo -over 15 -ignore '_test\.go$$' $$(ls internal/hadoopipc/*.go)

deadcode: ## Functions no binary (bench included) reaches (golang.org/x/tools deadcode, pinned in tools/go.mod); each kept one says why in a comment.
	$(GO) tool -modfile=tools/go.mod deadcode -tags bench ./cmd/...

unit: ## Unit and in-process integration tests with the race detector.
	$(GO) test $(RACE_FLAGS) -count=1 -timeout 20m -tags bench $(PKGS)
	@# The raft fork is a module of its own (statestore/third_party/raft/FORK.md):
	@# its change's tests run here; upstream's whole suite is run by hand per rebase.
	cd statestore/third_party/raft && $(GO) test -race -count=1 -run 'ParallelAppend' .

compile-tests: ## Compile and link every test binary without running one (-exec true), as unit, deploy-test and test-interop will run them: CI does this while the kube binaries build.
	$(GO) test $(RACE_FLAGS) -count=1 -tags bench -exec true $(PKGS) >/dev/null
	$(STATIC) $(GO) test $(STATIC_FLAGS) -tags interop -count=1 -exec true ./e2e/ >/dev/null
	cd deploy/test && $(GO) test $(RACE_FLAGS) -count=1 -exec true ./... >/dev/null
	cd hack/image && $(GO) test $(RACE_FLAGS) -count=1 -exec true ./... >/dev/null

test-interop: ## Real Apache Hadoop 3.4 (Maven-fetched) against our servers, and our client against a real RM.
	@# The Go tests run Maven themselves when the classpath is stale, and skip
	@# with the reason when java or mvn is missing (CI sets YARNFED_INTEROP_REQUIRED=1).
	@mkdir -p e2e/target
	@# On failure, each failed test's whole output follows (the grep below keeps only the summary lines).
	$(STATIC) $(GO) test $(STATIC_FLAGS) -tags interop -count=1 -timeout 60m -v ./e2e/ 2>&1 | tee e2e/target/interop.log | grep -E '^(=== RUN|--- |PASS|FAIL|ok|SKIP)|\bSKIP\b|interop:'; \
	  rc=$${PIPESTATUS[0]}; [ $$rc -eq 0 ] || awk -f scripts/failed-tests.awk e2e/target/interop.log; exit $$rc

deploy-test: ## Render deploy/'s overlays, server-side dry-run them on a real kube-apiserver, run each role as the manifests say, run the image on a real one-node cluster.
	@# A nested module (deploy/test/go.mod): kustomize stays out of yarnfed's build.
	@# Needs the kube binaries (make kube-binaries); CI sets YARNFED_KUBE_REQUIRED=1. The one-node
	@# cluster (deploy/test/kubenode) needs root, containerd, runc, the CNI plugins, nft and iptables; CI sets YARNFED_KUBENODE_REQUIRED=1.
	cd deploy/test && $(GO) test $(RACE_FLAGS) -count=1 -timeout 60m ./...
	cd hack/image && $(GO) test $(RACE_FLAGS) -count=1 ./...

IMAGE ?= yarnfed:latest
IMAGE_ARCHIVE ?= bin/image/yarnfed.oci.tar
image: ## Build the container image $(IMAGE) as an OCI archive ($(IMAGE_ARCHIVE)), reproducibly, with no Docker engine.
	@# What deploy/Dockerfile says (FROM scratch + the static binary), assembled
	@# by hack/image (go-containerregistry, a nested module). Same binary and
	@# Dockerfile, same digest; SOURCE_DATE_EPOCH sets the creation time (default 0).
	@# Load it: ctr -n k8s.io images import $(IMAGE_ARCHIVE); skopeo copy oci-archive:$(IMAGE_ARCHIVE) docker://...
	mkdir -p bin/linux
	$(STATIC) GOOS=linux $(GO) build $(STATIC_FLAGS) -ldflags "-s -w $(VERSION_LDFLAGS)" -o bin/linux/yarnfed ./cmd/yarnfed
	$(STATIC) GOOS=linux $(GO) build $(STATIC_FLAGS) -ldflags "-s -w $(VERSION_LDFLAGS)" -o bin/linux/yarnfed-hdfs-fetch ./cmd/yarnfed-hdfs-fetch
	cd hack/image && $(STATIC) $(GO) run $(STATIC_FLAGS) . -dockerfile $(CURDIR)/deploy/Dockerfile -context $(CURDIR)/bin/linux -name $(IMAGE) -out $(abspath $(IMAGE_ARCHIVE))

kube-binaries: ## Build (or reuse from ~/.cache/yarnfed) etcd, kube-apiserver, -controller-manager, -scheduler, kubelet, kube-proxy and CoreDNS in one go build.
	scripts/kube-binaries.sh

fuzz-smoke: ## Run each fuzz target briefly (FUZZTIME, default 1000x: executions, not seconds).
	@# At a lower priority: under `make test` it shares two cores with deploy-test and the
	@# interop tests, which wait on pods and heartbeats and set the run's length; the smoke
	@# computes and has no deadline, so it takes the cores they leave.
	nice -n 10 scripts/fuzz-smoke.sh

fuzz: ## Fuzz one target for long: make fuzz FUZZ=FuzzReadFrame PKG=./internal/hadoopipc FUZZTIME=5m
	$(GO) test -run='^$$' -fuzz='^$(FUZZ)$$' -fuzztime=$(or $(FUZZTIME),1m) $(PKG)

generate: ## Regenerate protobuf Go code with the pinned tools.
	scripts/genproto.sh

verify-generate: ## Fail if generated code differs from the .proto files.
	scripts/verify-genproto.sh

mutants: ## Mutation check: each bug in scripts/mutants/list.txt applied alone in a scratch copy must fail its named tests (MUTANTS_ARGS='-only regexp -j 2 -no-baseline -v').
	$(GO) run ./scripts/mutants $(MUTANTS_ARGS)

lincheck-long: ## The store's history-checked linearizability under faults, long: make lincheck-long LINCHECK_DURATION=30m (default 10m).
	YARNFED_LINCHECK_DURATION=$(or $(LINCHECK_DURATION),10m) $(GO) test -count=1 -timeout 90m -run '^TestStoreLinearizableUnderFaults$$' -v ./internal/systemtest/

bench: ## Go micro-benchmarks (ns/op, allocs/op).
	$(GO) test -run='^$$' -bench=. -benchmem $(PKGS)

bench-peers: ## Store vs ZooKeeper and etcd, router vs Hadoop's Router over ZooKeeper, ratios in one run (BENCH_DURATION, BENCH_ROWS, BENCH_ARGS).
	$(GO) build -tags bench -o bin/yarnfed-bench ./cmd/yarnfed
	@# etcd (and kube-apiserver) from the Go module proxy via hack/kube; reused from ~/.cache/yarnfed.
	etcd_dir=$$(scripts/kube-binaries.sh) && \
	  bin/yarnfed-bench bench statestore --etcd --etcd-binary "$$etcd_dir/etcd" --duration $(or $(BENCH_DURATION),5s) \
	    --concurrency 1,64,256 --rows $(or $(BENCH_ROWS),10000)
	bin/yarnfed-bench bench router --peer hadoop --java-client --duration $(or $(BENCH_DURATION),5s) --concurrency 1,16,64 $(BENCH_ARGS)

.PHONY: mutants bench-peers help build dev test compile-tests test-interop lint staticcheck cyclo deadcode unit deploy-test image kube-binaries fuzz-smoke fuzz generate verify-generate bench lincheck-long
