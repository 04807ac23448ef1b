# SPDX-License-Identifier: MIT
#
# usft top-level driver (docs/getting-started.md): on a fresh Debian 12 machine
# `make demo` and `make test` install what is missing (when root), configure,
# build and run.  CMake does the real work; this file only sequences it.
# Every command is echoed and every recipe line runs under bash -euo pipefail.
#
# Targets: deps build test test-<stage> demo install clean help (see `make help`).

SHELL         := /bin/bash
.SHELLFLAGS   := -euo pipefail -c
.DEFAULT_GOAL := build
.NOTPARALLEL:
.SUFFIXES:
MAKEFLAGS     += --no-builtin-rules

CMAKE         ?= cmake
CTEST         ?= ctest
GENERATOR     ?= Ninja
PREFIX        ?= /usr/local
JOBS          ?= 2
CTEST_TIMEOUT ?= 300
CTEST_FLAGS   ?= --output-on-failure -j$(JOBS) --timeout $(CTEST_TIMEOUT)
# 1: run every test stage and summarise; 0: stop at the first failing stage.
KEEP_GOING    ?= 1
# 1: skip the Debian package check (other distributions, prepared images).
USFT_SKIP_DEPS ?= 0

# Debian 12 packages the build, the tests and the install checks need.
DEPS := libelf-dev libdw-dev libunwind-dev liburcu-dev libcriterion-dev \
	pkg-config cmake ninja-build gcc g++ clang make libcapstone-dev \
	libclang-rt-14-dev python3 uftrace gnuplot-nox

BUILD_DIR := build
DEMO      := $(BUILD_DIR)/samples/demo/usft-demo
DEMO_TRACEE := $(BUILD_DIR)/samples/tracee/tracee-nest
USFT_CLI  := $(BUILD_DIR)/inject/usft
GEN_FILE  := $(if $(filter Ninja%,$(GENERATOR)),build.ninja,Makefile)

# ---------------------------------------------------------------------------
# Test stages.  A stage configures its own build directory (once), builds it
# and runs ctest there; `make test` runs every stage of TEST_STAGES in order
# and prints "N passed, M failed" over all of them.  Per stage:
#   <s>_DIR     build directory
#   <s>_CMAKE   configure arguments
#   <s>_CTEST   extra ctest arguments (test selection)
#   <s>_ENV     VAR=value words put before the configure and ctest commands
#   <s>_PREREQ  make targets to run first (toolchains, sysroots, ...)
# To add one, append its name to TEST_STAGES and define those, e.g.
#   TEST_STAGES  += arm64
#   arm64_DIR    := build-arm64
#   arm64_CMAKE  := -DCMAKE_TOOLCHAIN_FILE=<aarch64-qemu.cmake> -DUSFT_WERROR=ON
#   arm64_CTEST  := -L 'unit|conformance'
#   arm64_PREREQ := arm64-sysroot
# Run a subset with `make test TEST_STAGES="native clang"`, one with `make test-asan`.
TEST_STAGES ?= native asan clang tsan

# native: the main build (also `make build`), every ctest label.
native_DIR    := $(BUILD_DIR)
native_CMAKE  := -DCMAKE_BUILD_TYPE=RelWithDebInfo -DUSFT_WERROR=ON
# Skip list (one reason per entry): the docs label has its own stage (last).
native_CTEST  := -LE docs
native_ENV    :=
native_PREREQ :=

# asan: AddressSanitizer + UBSan (UBSan made fatal), unit and conformance.
asan_DIR      := build-asan
asan_CMAKE    := -DCMAKE_BUILD_TYPE=Debug -DUSFT_WERROR=ON \
	'-DUSFT_SANITIZE=address;undefined' -DUSFT_BUILD_BENCH=OFF
asan_CTEST    := -L 'unit|conformance'
asan_ENV      := UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
asan_PREREQ   :=

# clang: the same sources through clang -Werror, unit and conformance.
clang_DIR     := build-clang
clang_CMAKE   := -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DUSFT_WERROR=ON -DUSFT_BUILD_BENCH=OFF
clang_CTEST   := -L 'unit|conformance|fuzz'
clang_ENV     := CC=clang
clang_PREREQ  :=

# tsan: ThreadSanitizer over the stress and torture suites; every entry of
# tests/tsan.supp names the intended race it covers.
tsan_DIR      := build-tsan
tsan_CMAKE    := -DCMAKE_BUILD_TYPE=RelWithDebInfo -DUSFT_WERROR=ON \
	-DUSFT_SANITIZE=thread -DUSFT_BUILD_BENCH=OFF
tsan_CTEST    := -L 'stress|torture'
tsan_ENV      := TSAN_OPTIONS=suppressions=$(CURDIR)/tests/tsan.supp:halt_on_error=1:second_deadlock_stack=1:history_size=7
tsan_PREREQ   :=

# arm64 / arm64-callops: the cross build (Debian's gcc-aarch64-linux-gnu)
# whose unit and conformance suites run under qemu-user, once per site
# layout: -fpatchable-function-entry=2 and =4,2 with CALL_OPS literals.
# scripts/arm64-stage.sh sets the machine up (scripts/setup-arm64.sh), runs
# ctest with --timeout inside a hard `timeout -s KILL $(ARM64_KILL_TIMEOUT)`
# and, where qemu cannot run, prints a loud SKIPPED line (a failure under
# CI=true).  Besides unit and conformance, the arm64 label selects what else
# runs under qemu (direct samples, trampoline suites, fgraph, bench-smoke).
TEST_STAGES += arm64 arm64-callops
ARM64_STAGES := arm64 arm64-callops
ARM64_KILL_TIMEOUT ?= 900
arm64_DIR     := build-arm64
arm64_CMAKE   := -DCMAKE_BUILD_TYPE=RelWithDebInfo -DUSFT_WERROR=ON -DUSFT_BUILD_BENCH=ON
arm64_CTEST   := -L unit|conformance|arm64|bench-smoke
arm64-callops_DIR   := build-arm64-callops
# the second layout: what the instrumented suites need (unit tests are not
# instrumented: the arm64 stage ran them)
arm64-callops_CMAKE := $(arm64_CMAKE) -DUSFT_INSTRUMENT_CALL_OPS=ON \
	-DUSFT_BUILD_SAMPLES=ON -DUSFT_BUILD_INJECT=ON
arm64-callops_CTEST := -L conformance|arm64|bench-smoke

# docs: every command block of docs/labs/*.md, docs/getting-started.md and
# README.md run as written (in the native
# build, after the arm64 stages so the qemu lab finds its cross build), and
# the man page / --help / options reference agreement.
TEST_STAGES += docs
docs_DIR      := $(BUILD_DIR)
docs_CMAKE    := $(native_CMAKE)
docs_CTEST    := -L docs
docs_ENV      :=
docs_PREREQ   :=

# Build directories of the CMakePresets.json presets (removed by `make clean`).
PRESET_DIRS := build-dev build-ci-gcc build-ci-clang build-asan build-tsan build-release

.PHONY: check-long bench all deps build test demo install clean help

all: build

# ---------------------------------------------------------------------------
deps:
	@if [ "$(USFT_SKIP_DEPS)" = 1 ]; then exit 0; fi; \
	if ! command -v dpkg-query >/dev/null; then \
		echo "make deps: not a Debian system; install the equivalents of: $(DEPS)" >&2; \
		echo "make deps: then run make with USFT_SKIP_DEPS=1" >&2; \
		exit 1; \
	fi; \
	missing=""; \
	for p in $(DEPS); do \
		dpkg-query -W -f='$${Status}' "$$p" 2>/dev/null | grep ' installed$$' >/dev/null \
			|| missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	echo "make deps: missing Debian packages:$$missing"; \
	if [ "$$(id -u)" != 0 ]; then \
		echo "make deps: not root; run:" >&2; \
		echo "sudo apt-get install -y$$missing" >&2; \
		exit 1; \
	fi; \
	echo "+ apt-get update"; \
	apt-get update; \
	echo "+ DEBIAN_FRONTEND=noninteractive apt-get install -y$$missing"; \
	DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing </dev/null

# $(call configure_build,<stage>): configure <stage>_DIR when it has no build
# system yet (cmake --build re-runs cmake itself when CMakeLists change), then build.
define configure_build
[ -f $($(1)_DIR)/$(GEN_FILE) ] || $($(1)_ENV) $(CMAKE) -S . -B $($(1)_DIR) -G $(GENERATOR) $($(1)_CMAKE)
$(CMAKE) --build $($(1)_DIR)
endef

build: deps
	$(call configure_build,native)

# test-<stage>: configure + build + ctest of one stage; the ctest output is
# kept in <dir>/usft-ctest-<stage>.log for the summary of `make test`.
define stage_rule
.PHONY: test-$(1)
test-$(1): deps $$($(1)_PREREQ)
	rm -f $$($(1)_DIR)/usft-ctest-$(1).log
	$$(call configure_build,$(1))
	$$($(1)_ENV) $$(CTEST) --test-dir $$($(1)_DIR) $$(CTEST_FLAGS) $$($(1)_CTEST) 2>&1 | tee $$($(1)_DIR)/usft-ctest-$(1).log
endef
$(foreach s,$(filter-out $(ARM64_STAGES),$(sort native asan clang tsan docs $(TEST_STAGES))),$(eval $(call stage_rule,$(s))))

# the arm64 stages: setup, skip or run, all in scripts/arm64-stage.sh
define arm64_stage_rule
.PHONY: test-$(1)
test-$(1): deps
	STAGE='$(1)' GENERATOR='$$(GENERATOR)' JOBS='$$(JOBS)' CTEST_TIMEOUT='$$(CTEST_TIMEOUT)' \
	ARM64_CTEST='$$($(1)_CTEST)' ARM64_KILL_TIMEOUT='$$(ARM64_KILL_TIMEOUT)' \
	bash scripts/arm64-stage.sh $$($(1)_DIR) $$($(1)_CMAKE)
endef
$(foreach s,$(ARM64_STAGES),$(eval $(call arm64_stage_rule,$(s))))

# Runs every stage (a failing stage does not stop the next unless KEEP_GOING=0),
# then one line per stage and the total "N passed, M failed".  A stage that
# fails without a ctest verdict (configure/build error) counts as one failure.
test: deps
	@rc=0; results=""; \
	for s in $(TEST_STAGES); do \
		echo "+ $(MAKE) test-$$s"; \
		if $(MAKE) --no-print-directory test-$$s; then \
			results="$$results $$s:ok"; \
		else \
			rc=1; results="$$results $$s:failed"; \
			if [ "$(KEEP_GOING)" != 1 ]; then break; fi; \
		fi; \
	done; \
	passed=0; failed=0; \
	echo "=== usft test summary"; \
	for sd in $(foreach s,$(TEST_STAGES),$(s):$($(s)_DIR)); do \
		s=$${sd%%:*}; d=$${sd#*:}; \
		case " $$results " in \
		*" $$s:ok "*) st=ok ;; \
		*" $$s:failed "*) st=failed ;; \
		*) echo "stage $$s: not run"; continue ;; \
		esac; \
		line=$$(grep -Eo '[0-9]+ tests failed out of [0-9]+' $$d/usft-ctest-$$s.log 2>/dev/null | tail -n 1 || true); \
		if [ -n "$$line" ]; then \
			f=$${line%% *}; t=$${line##* }; p=$$((t - f)); \
			if [ $$st = failed ] && [ $$f = 0 ]; then f=1; fi; \
			echo "stage $$s ($$d): $$p passed, $$f failed"; \
		elif [ $$st = failed ]; then \
			p=0; f=1; echo "stage $$s ($$d): FAILED before any test ran (see above)"; \
		else \
			p=0; f=0; echo "stage $$s ($$d): no tests"; \
		fi; \
		passed=$$((passed + p)); failed=$$((failed + f)); \
	done; \
	echo "$$passed passed, $$failed failed"; \
	exit $$rc

# ---------------------------------------------------------------------------
demo: build
	@for f in $(DEMO) $(DEMO_TRACEE) $(USFT_CLI); do \
		if [ ! -x $$f ]; then \
			echo "make demo: $$f was not built (USFT_BUILD_SAMPLES=OFF in $(BUILD_DIR)/?)" >&2; \
			exit 1; \
		fi; \
	done
	./$(DEMO)
	@echo
	@echo "== usft record -p function_graph: a bundled program built with the patch flags"
	@echo "   (samples/tracee/nest.c), run as is through the LD_PRELOAD shim, no relink =="
	./$(USFT_CLI) record -p function_graph -o $(BUILD_DIR)/demo-trace.dat ./$(DEMO_TRACEE)
	./$(USFT_CLI) report -i $(BUILD_DIR)/demo-trace.dat

# Minutes of model-based sequences and stress (not part of `make test`).
check-long: build
	USFT_MODEL_SEQS=3000 USFT_MODEL_STEPS=300 $(CTEST) --test-dir $(BUILD_DIR) -L model --output-on-failure --timeout 3600
	USFT_STRESS_SECONDS=30 $(CTEST) --test-dir $(BUILD_DIR) -L stress --output-on-failure --timeout 3600
	USFT_TORTURE_SECONDS=120 $(CTEST) --test-dir $(BUILD_DIR) -L torture --output-on-failure --timeout 3600
	USFT_TORTURE_SECONDS=120 USFT_OPTIONS=per_callsite_ops=1 $(BUILD_DIR)/tests/torture/torture

# Benchmarks: every table of docs/benchmarks.md, results in bench-results/.
# QUICK=1 for a run under two minutes.  Never part of `make test` (only the
# 1% smoke runs are, as ctest -L bench-smoke).
QUICK ?= 0
bench: build
	QUICK=$(QUICK) BUILD=$(BUILD_DIR) ./scripts/bench.sh

install: build
	$(CMAKE) --install $(BUILD_DIR) --prefix $(PREFIX)

clean:
	rm -rf $(sort $(foreach s,$(TEST_STAGES),$($(s)_DIR)) $(PRESET_DIRS))

help:
	@echo 'usft make targets (Debian 12; CMake + Ninja underneath):'
	@echo '  deps         check the Debian packages; install the missing ones when root,'
	@echo '               else print the sudo apt-get line and fail'
	@echo '  build        configure $(BUILD_DIR)/ (RelWithDebInfo, -Werror) once and build it (default)'
	@echo '  test         run the test stages [$(TEST_STAGES)] and print "N passed, M failed"'
	@echo '  test-STAGE   one stage: $(foreach s,$(TEST_STAGES),$(s)=$($(s)_DIR)/)'
	@echo '  demo         build, then run $(DEMO)'
	@echo '  install      cmake --install $(BUILD_DIR) --prefix $(PREFIX)  (PREFIX=..., DESTDIR=...)'
	@echo '  clean        rm -rf the stage and preset build directories'
	@echo 'variables: PREFIX JOBS CTEST_TIMEOUT KEEP_GOING=0|1 TEST_STAGES USFT_SKIP_DEPS=1'
