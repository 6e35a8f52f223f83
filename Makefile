# pagoda: `make` builds build/bin/pagoda; `make run` serves the bundled model; `make test` runs
# every test suite (release build, ASan+UBSan unit tests, bounded fuzzing). Each installs its
# Debian packages when missing.
.PHONY: all build pagoda-bin run test test-release test-bench test-asan test-fuzz deps deps-test format clean

BUILD_DIR ?= build
ASAN_DIR ?= build-asan
FUZZ_DIR ?= build-fuzz
FUZZ_SECONDS ?= 30
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

all: build

deps:
	@scripts/install-deps.sh build

deps-test:
	@scripts/install-deps.sh test

$(BUILD_DIR)/build.ninja:
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release -DPAGODA_WERROR=ON $(CMAKE_FLAGS)

build: deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS)

# Only the `pagoda` binary (and the libraries it links): serving needs no test binaries.
pagoda-bin: deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS) --target pagoda

# A short generation first (proof the model works), then the OpenAI-compatible server on
# http://127.0.0.1:8000 (HOST/PORT to change; Ctrl-C or SIGTERM stops it after draining).
HOST ?= 127.0.0.1
PORT ?= 8000
run: pagoda-bin
	$(BUILD_DIR)/bin/pagoda run -p "Once upon a time" -n 48
	@echo
	exec $(BUILD_DIR)/bin/pagoda serve --host $(HOST) --port $(PORT)

test: deps-test test-release test-asan test-fuzz
	@echo "make test: all suites passed"

# Label bench: speed checks against this machine's own benchmarks (noisy when shared);
# `make test-bench` runs them.
test-release: build
	cd $(BUILD_DIR) && ctest --output-on-failure -LE 'gpu|bench' -j $(JOBS)

test-bench: build
	cd $(BUILD_DIR) && ctest --output-on-failure -L bench

$(ASAN_DIR)/build.ninja:
	cmake -S . -B $(ASAN_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DPAGODA_SANITIZE=ON \
	  -DPAGODA_UNIT_ONLY=ON -DPAGODA_BUILD_BENCH=OFF -DPAGODA_WERROR=ON \
	  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 $(CMAKE_FLAGS)

test-asan: deps-test $(ASAN_DIR)/build.ninja
	cmake --build $(ASAN_DIR) -j $(JOBS)
	cd $(ASAN_DIR) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -L unit -j $(JOBS)

$(FUZZ_DIR)/build.ninja:
	cmake -S . -B $(FUZZ_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPAGODA_FUZZ=ON \
	  -DPAGODA_UNIT_ONLY=ON -DPAGODA_BUILD_TESTS=ON -DPAGODA_BUILD_BENCH=OFF \
	  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 $(CMAKE_FLAGS)

test-fuzz: deps-test $(FUZZ_DIR)/build.ninja
	cmake --build $(FUZZ_DIR) -j $(JOBS) --target fuzz_targets
	scripts/run-fuzz.sh $(FUZZ_DIR) $(FUZZ_SECONDS) $(JOBS)

format:
	git ls-files '*.cc' '*.h' '*.inc' | xargs clang-format-14 -i

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR) $(FUZZ_DIR)
