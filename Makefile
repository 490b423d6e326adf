# hcclrun's two entry points are `make demo` and `make test` (see README.md).
GO ?= go
BIN := $(CURDIR)/bin

# Binaries are static (no cgo: the net package's resolver is the pure-Go
# one) and hcclrun leaves out urfave/cli's man-page and Markdown generators.
# A static binary copies to remote hosts without a libc to match, and on
# these VMs, where every page fault traps to the hypervisor, it starts
# faster: hyperfine, `hcclrun -np 2 initbarrier`, 77.1 ms dynamic against
# 66.8 ms static (docs/performance.md, "Startup").
GOBUILD := CGO_ENABLED=0 $(GO) build -tags urfave_cli_no_docs

.PHONY: build demo test vet unit noasm race clean

build:
	$(GOBUILD) -o $(BIN)/ ./cmd/...
	$(GOBUILD) -o $(BIN)/ ./examples/...

# A four-rank data-parallel training job on this machine.
demo: build
	$(BIN)/hcclrun -np 4 $(BIN)/train -epochs 5

# Everything CI runs. Multi-host tests run when testhosts/hosts.sh is up
# (see .ci/run) and skip with a message otherwise.
test: vet unit noasm race

vet:
	$(GO) vet ./...

unit:
	$(GO) test -count=1 -timeout 20m ./...

noasm:
	$(GO) test -count=1 -tags noasm ./runtime/reduce/ ./memcopy/ ./release/

race:
	$(GO) test -count=1 -race -timeout 10m ./netio/... ./runtime/plan/ ./runtime/selector/ ./launcher/

clean:
	rm -rf $(BIN)
