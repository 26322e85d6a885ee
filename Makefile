# tcpxogen: see README.md. Every target works offline on the bundled
# reconstruction unless SOURCE says otherwise.

GO      ?= go
SOURCE  ?=
PKGS    ?= ./...

# SOURCE selects where `generate` reads the installer image:
#   registry | testdata | oci-layout:DIR | REGISTRY/REPO@sha256:DIGEST
# Empty: the source recorded in the committed generated/tcpxo provenance.
ifneq ($(SOURCE),)
EXTRACT_SOURCE := --source $(SOURCE)
endif

BIN     := bin/tcpxogen

# Both trainer versions share one module path, so the CLI is built once per
# version: bin/tcpxogen links the trainer go.mod (and the BOM) pins, each
# sibling bin/tcpxogen-trainer-VERSION the one of its modfile. `check
# trainjob --trainer VERSION|all` runs the sibling next to itself; a release
# publishes every binary of `build`.
V23_MODFILE := validators/realize/trainer-v2.3.0.mod
BIN_V23     := bin/tcpxogen-trainer-v2.3.0

.PHONY: all deps build generate extract test test-short e2e e2e-v2.3.0 e2e-helm bench demo bom-check release-check sbom $(BIN) $(BIN_V23)

all: generate test

deps:
	@scripts/install-deps.sh

# extract then regenerate everything downstream; `go generate ./...` does
# the same with the recorded source.
generate:
	$(GO) run ./tools/tcpxogen extract $(EXTRACT_SOURCE)
	$(GO) generate ./...

extract:
	$(GO) run ./tools/tcpxogen extract $(EXTRACT_SOURCE)

# -buildvcs=auto records the checkout's revision (tcpxogen version) where
# git can read it, whatever GOFLAGS says. go build skips the link when the binary is current, so a warm bom-check
# costs the check itself (~0.1 s), not a `go run` link (~4 s).
$(BIN):
	@$(GO) build -buildvcs=auto -o $(BIN) ./tools/tcpxogen

$(BIN_V23):
	@$(GO) build -buildvcs=auto -modfile=$(V23_MODFILE) -o $(BIN_V23) ./tools/tcpxogen

build: $(BIN) $(BIN_V23)

# demo: the whole pipeline offline on the bundled reconstruction, with a
# summary; outputs under out/demo/.
demo: $(BIN)
	@$(BIN) demo

# bom-check: the coupling check. Offline; fails when anything drifted.
bom-check: $(BIN)
	@$(BIN) check

# release-check: bom-check plus provenance from the pinned image and every
# pinned digest resolved against its registry (fails offline).
release-check: $(BIN)
	@$(BIN) check --release

# sbom: CycloneDX 1.6 JSON of every image the shipped manifests pull, the
# NCCL plugin and core versions, the trainer, and the data's provenance.
SBOM ?= bin/sbom.cdx.json
sbom: $(BIN)
	@$(BIN) sbom -o $(SBOM)

# test: every suite. The in-process API server suite (tag apiserver) is slow
# to compile (~6 min cold) and is kept out of plain `go test ./...`.
# Packages with apiserver-tagged suites (schema, lifecycle and the validate
# library; validatecmd has none since the orchestration moved to the library).
APISERVER_PKGS := ./validators/...

test: deps
	$(GO) vet $(PKGS)
	$(GO) vet -tags apiserver $(APISERVER_PKGS)
	$(GO) test -count=1 $(PKGS)
	$(GO) test -count=1 -tags apiserver $(APISERVER_PKGS)
	$(GO) vet -modfile=$(V23_MODFILE) ./validators/realize/... ./validators/lint/... ./pipeline/docgen/...
	$(GO) test -count=1 -modfile=$(V23_MODFILE) ./validators/realize/... ./validators/lint/... ./pipeline/docgen/...
	$(MAKE) e2e
	$(MAKE) e2e-v2.3.0

# e2e: the end-to-end scenarios against a real control plane in one test
# process (kube-apiserver, Job controller and garbage collector, JobSet and
# Kubeflow Trainer controllers and webhooks), in the nested module e2e/ so
# nothing above links it. ~620 CPU-seconds to compile cold (7-10 min on
# 2 idle cores, 2.5 GB link peak); warm, vet+build+run ~75 s. See
# e2e/README.md.
e2e:
	cd e2e && $(GO) vet ./...
	cd e2e && $(GO) test -count=1 ./...

# e2e-v2.3.0: the same scenarios on the control plane of trainer v2.3.0
# (Kubernetes 1.36, JobSet v0.12): e2e's second modfile picks the versions,
# the build tag the harness's version-split files (e2e/harness/trainer_*.go);
# they go together. The validate scenarios run the shipped CLI (it links the
# BOM's trainer) against it. A second cold compile of Kubernetes, see
# e2e/README.md for its cost. It also runs the Helm chart's scenarios
# (e2e/helm: helm template = render, lint, schema, install/uninstall), which
# only this modfile builds; they are named one by one because e2e/go.mod's
# `ignore ./helm` keeps them out of every ./... pattern whatever the modfile.
E2E_V23 := -tags trainer_v2_3_0 -modfile=trainer-v2.3.0.mod
e2e-v2.3.0:
	cd e2e && $(GO) vet $(E2E_V23) ./... ./helm ./helm/notrainer
	cd e2e && $(GO) test -count=1 $(E2E_V23) ./... ./helm ./helm/notrainer

# e2e-helm: only the Helm chart's scenarios (part of e2e-v2.3.0).
e2e-helm:
	cd e2e && $(GO) vet $(E2E_V23) ./helm ./helm/notrainer
	cd e2e && $(GO) test -count=1 $(E2E_V23) ./helm ./helm/notrainer

test-short:
	$(GO) test -short $(PKGS)

# bench: top-down extraction vs flatten against a real local registry.
# BENCH_SIZE is the synthetic base size (default 2 GiB).
BENCH_SIZE ?= 2147483648
bench: deps
	$(GO) run ./tools/bench --size $(BENCH_SIZE)
