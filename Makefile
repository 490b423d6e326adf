# hcclrun's two entry points are `make demo` and `make test` (see README.md).
GO ?= go
BIN := $(CURDIR)/bin

# Binaries are static (no cgo: the net package's resolver is the pure-Go
# one) and hcclrun leaves out urfave/cli's man-page and Markdown generators:
# a static binary copies to remote hosts without a libc to match, and
# starts faster (docs/measurements.md#static-binaries).
GOBUILD := CGO_ENABLED=0 $(GO) build -tags urfave_cli_no_docs

.PHONY: build demo test vet unit noasm race clean

# The plot is a module of its own (cmd/hcclrun-plot/go.mod).
PLOT := cmd/hcclrun-plot

build:
	$(GOBUILD) -o $(BIN)/ ./cmd/...
	$(GOBUILD) -o $(BIN)/ ./examples/...
	cd $(PLOT) && $(GOBUILD) -o $(BIN)/ .

# A four-rank data-parallel training job on this machine.
demo: build
	$(BIN)/hcclrun -np 4 $(BIN)/train -epochs 5

# Everything CI runs. Multi-host tests run when internal/testhosts/hosts.sh is up
# (see .ci/run) and skip with a message otherwise.
test: vet unit noasm race

# go mod tidy -diff fails on a go.mod or go.sum that tidy would change.
vet:
	$(GO) mod tidy -diff
	$(GO) vet ./...
	cd $(PLOT) && $(GO) mod tidy -diff && $(GO) vet ./...

unit:
	$(GO) test -count=1 -timeout 20m ./...
	cd $(PLOT) && $(GO) test -count=1 ./...

noasm:
	$(GO) test -count=1 -tags noasm ./runtime/reduce/ ./internal/cpu/

race:
	$(GO) test -count=1 -race -timeout 10m ./netio/... ./runtime/plan/ ./runtime/selector/ ./launcher/

clean:
	rm -rf $(BIN)
