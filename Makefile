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

.PHONY: all deps generate extract test test-short bench vet

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

test: deps
	$(GO) vet $(PKGS)
	$(GO) test -count=1 $(PKGS)

test-short:
	$(GO) test -short $(PKGS)

# bench: top-down extraction vs flatten against a real local registry.
# BENCH_SIZE is the synthetic base size (default 2 GiB).
BENCH_SIZE ?= 2147483648
bench: deps
	$(GO) run ./tools/tcpxogen/internal/bench --size $(BENCH_SIZE)
