# hcclrun's two entry points are `make demo` and `make test` (see README.md).
GO ?= go
BIN := $(CURDIR)/bin

.PHONY: build demo test vet unit noasm race clean

build:
	$(GO) build -o $(BIN)/ ./cmd/...
	$(GO) build -o $(BIN)/ ./examples/...

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
	$(GO) test -count=1 -tags noasm ./runtime/reduce/

race:
	$(GO) test -count=1 -race -timeout 10m ./netio/... ./runtime/plan/ ./runtime/selector/ ./launcher/

clean:
	rm -rf $(BIN)
