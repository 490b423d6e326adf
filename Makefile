# hcclrun's two entry points are `make demo` and `make test` (see README.md).
GO ?= go
BIN := $(CURDIR)/bin

# Binaries are static (no cgo: the net package's resolver is the pure-Go
# one) and hcclrun leaves out urfave/cli's man-page and Markdown generators:
# a static binary copies to remote hosts without a libc to match, and
# starts faster (docs/measurements.md#static-binaries).
GOBUILD := CGO_ENABLED=0 $(GO) build -tags urfave_cli_no_docs

.PHONY: build lib install demo test vet unit noasm race clean

# The plot is a module of its own (cmd/hcclrun-plot/go.mod).
PLOT := cmd/hcclrun-plot

build: lib
	$(GOBUILD) -o $(BIN)/ ./cmd/...
	$(GOBUILD) -o $(BIN)/ ./examples/...
	cd $(PLOT) && $(GOBUILD) -o $(BIN)/ .

# libhccl.so, the runtime's C interface, is the one cgo build: lib/,
# include/hccl.h and lib/pkgconfig/hccl.pc, usable from this checkout
# (PKG_CONFIG_PATH=$(CURDIR)/lib/pkgconfig) or, after make install, from
# PREFIX. cgo writes a header of its own, libhccl.h; hccl.h is the interface.
LIB := $(CURDIR)/lib
PREFIX ?= /usr/local

lib:
	CGO_ENABLED=1 $(GO) build -buildmode=c-shared -o $(LIB)/libhccl.so ./runtime/cabi
	rm -f $(LIB)/libhccl.h
	install -D -m 644 runtime/cabi/hccl.h $(CURDIR)/include/hccl.h
	mkdir -p $(LIB)/pkgconfig
	sed 's|@PREFIX@|$(CURDIR)|' runtime/cabi/hccl.pc.in > $(LIB)/pkgconfig/hccl.pc

install: build
	install -D -m 755 -t $(PREFIX)/bin $(BIN)/hcclrun
	install -D -m 755 $(LIB)/libhccl.so $(PREFIX)/lib/libhccl.so
	install -D -m 644 runtime/cabi/hccl.h $(PREFIX)/include/hccl.h
	mkdir -p $(PREFIX)/lib/pkgconfig
	sed 's|@PREFIX@|$(PREFIX)|' runtime/cabi/hccl.pc.in > $(PREFIX)/lib/pkgconfig/hccl.pc

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
	rm -rf $(BIN) $(LIB) $(CURDIR)/include
