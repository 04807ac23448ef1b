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
# Empty: the presets' generator (Ninja); set to configure with another one.
GENERATOR     ?=
PREFIX        ?= /usr/local
# Empty: the test presets' values (2 jobs, 300 s per test).
JOBS          ?=
CTEST_TIMEOUT ?=
CTEST_FLAGS   ?= $(if $(JOBS),-j$(JOBS)) $(if $(CTEST_TIMEOUT),--timeout $(CTEST_TIMEOUT))
# 1: run every test stage and summarise; 0: stop at the first failing stage.
KEEP_GOING    ?= 1
# 1: skip the Debian package check (other distributions, prepared images).
USFT_SKIP_DEPS ?= 0

# Debian 12 packages the build, the tests and the install checks need.
DEPS := libelf-dev libdw-dev libunwind-dev liburcu-dev libcriterion-dev \
	pkg-config cmake ninja-build gcc g++ clang make libcapstone-dev \
	libclang-rt-14-dev python3 uftrace gnuplot-nox linux-source-6.1 \
	libtracecmd-dev libtracefs-dev libtraceevent-dev trace-cmd fonts-dejavu-core \
	libfuse3-dev fuse3

BUILD_DIR := build
DEMO      := $(BUILD_DIR)/samples/demo/usft-demo
DEMO_TRACEE := $(BUILD_DIR)/samples/tracee/tracee-nest
USFT_CLI  := $(BUILD_DIR)/inject/usft
GEN_FILE  := $(if $(filter-out Ninja%,$(or $(GENERATOR),Ninja)),Makefile,build.ninja)
GEN_ARG   := $(if $(GENERATOR),-G '$(GENERATOR)')

# ---------------------------------------------------------------------------
# Test stages.  CMakePresets.json is the one definition of every build
# variant: a stage is its workflow preset of the same name (configure preset:
# build directory, compiler, build type, sanitizers; test preset: labels,
# environment, jobs, timeout), so `cmake --workflow --preset asan` outside
# make runs what `make test-asan` runs.  This file only sequences: a stage
# configures its directory (once), builds it and runs its test preset;
# `make test` runs every stage of TEST_STAGES in order and prints
# "N passed, M failed" over all of them.
# To add one, add the presets (configure, build, test, workflow) and append
# its name here.  Run a subset with `make test TEST_STAGES="native clang"`,
# one with `make test-asan`.
#   native         build/ (also `make build`), every label but docs
#   asan clang tsan  build-<stage>/: ASan+UBSan, clang -Werror, ThreadSanitizer
#   arm64 arm64-callops  the cross builds run under qemu-user, one per site
#                  layout (=2, and =4,2 with CALL_OPS literals):
#                  scripts/arm64-stage.sh sets the machine up
#                  (scripts/setup-arm64.sh), runs ctest inside a hard
#                  `timeout -s KILL $(ARM64_KILL_TIMEOUT)` and, where qemu
#                  cannot run, prints a loud SKIPPED line (a failure under CI=true)
#   docs           the native build's docs label, after the arm64 stages so
#                  the qemu lab finds its cross build
TEST_STAGES ?= native asan clang tsan arm64 arm64-callops docs
ARM64_STAGES := arm64 arm64-callops
ARM64_KILL_TIMEOUT ?= 900
ALL_STAGES := native asan clang tsan $(ARM64_STAGES) docs
# stages that run some labels only: their builds skip the rest (configure_build)
SUBSET_STAGES ?= asan clang tsan arm64 arm64-callops

# $(call stage_preset,<stage>): its configure (and build) preset; docs tests
# the native build.  $(call stage_dir,<stage>): that preset's binaryDir.
stage_preset = $(if $(filter docs,$(1)),native,$(1))
stage_dir = $(if $(filter native,$(call stage_preset,$(1))),$(BUILD_DIR),build-$(call stage_preset,$(1)))

# Build directories of the other presets (removed by `make clean`).
PRESET_DIRS := build-dev build-release

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

# $(call configure_build,<stage>): configure the stage's directory from its
# preset when it has no build system yet (cmake --build re-runs cmake itself
# when CMakeLists change), then build.
# A stage of SUBSET_STAGES (with Ninja) builds only what its tests need:
# scripts/stage-targets.py reads its test preset's labels and the generated
# CTestTestfile.cmake files and prints "--target ..." (nothing: everything).
# SUBSET_STAGES= builds every target in every stage.
define configure_build
[ -f $(call stage_dir,$(1))/$(GEN_FILE) ] || $(CMAKE) --preset $(call stage_preset,$(1)) $(GEN_ARG)
$(CMAKE) --build --preset $(call stage_preset,$(1)) $(if $(and $(filter $(1),$(SUBSET_STAGES)),$(filter build.ninja,$(GEN_FILE))),$$(python3 scripts/stage-targets.py --cmake-args $(call stage_preset,$(1)) $(call stage_dir,$(1))))
endef

build: deps
	$(call configure_build,native)

# test-<stage>: configure + build + the stage's test preset; the ctest output
# is kept in <dir>/usft-ctest-<stage>.log for the summary of `make test`.
define stage_rule
.PHONY: test-$(1)
test-$(1): deps
	rm -f $$(call stage_dir,$(1))/usft-ctest-$(1).log
	$$(call configure_build,$(1))
	$$(CTEST) --preset $(1) $$(CTEST_FLAGS) 2>&1 | tee $$(call stage_dir,$(1))/usft-ctest-$(1).log
endef
$(foreach s,$(filter-out $(ARM64_STAGES),$(sort $(ALL_STAGES) $(TEST_STAGES))),$(eval $(call stage_rule,$(s))))

# the arm64 stages: setup, skip or run, all in scripts/arm64-stage.sh
define arm64_stage_rule
.PHONY: test-$(1)
test-$(1): deps
	STAGE='$(1)' GENERATOR='$$(GENERATOR)' CTEST_FLAGS='$$(CTEST_FLAGS)' \
	SUBSET='$(if $(filter $(1),$(SUBSET_STAGES)),1)' ARM64_KILL_TIMEOUT='$$(ARM64_KILL_TIMEOUT)' \
	bash scripts/arm64-stage.sh $(1) $$(call stage_dir,$(1))
endef
$(foreach s,$(ARM64_STAGES),$(eval $(call arm64_stage_rule,$(s))))

# Runs every stage (a failing stage does not stop the next unless KEEP_GOING=0),
# then one line per stage and the total "N passed, M failed".  A stage that
# fails without a ctest verdict (configure/build error) counts as one failure.
test: deps
	@rc=0; results=""; times=""; start=$$(date +%s); \
	for s in $(TEST_STAGES); do \
		echo "+ $(MAKE) test-$$s"; \
		t0=$$(date +%s); \
		if $(MAKE) --no-print-directory test-$$s; then \
			results="$$results $$s:ok"; \
		else \
			rc=1; results="$$results $$s:failed"; \
		fi; \
		times="$$times $$s:$$(( $$(date +%s) - t0 ))"; \
		if [ $$rc != 0 ] && [ "$(KEEP_GOING)" != 1 ]; then break; fi; \
	done; \
	passed=0; failed=0; \
	echo "=== usft test summary"; \
	for sd in $(foreach s,$(TEST_STAGES),$(s):$(call stage_dir,$(s))); do \
		s=$${sd%%:*}; d=$${sd#*:}; \
		case " $$results " in \
		*" $$s:ok "*) st=ok ;; \
		*" $$s:failed "*) st=failed ;; \
		*) echo "stage $$s: not run"; continue ;; \
		esac; \
		line=$$(grep -Eo '[0-9]+ tests failed out of [0-9]+' $$d/usft-ctest-$$s.log 2>/dev/null | tail -n 1 || true); \
		el=$$(echo " $$times " | grep -Eo " $$s:[0-9]+ " | sed 's/.*://' | tr -dc 0-9 || true); \
		tt=$$(grep -Eo 'Total Test time \(real\) = *[0-9.]+' $$d/usft-ctest-$$s.log 2>/dev/null | tail -n 1 | grep -Eo '[0-9]+\.[0-9]+$$' || true); \
		tm="$${el:-?} s in all$${tt:+, tests $$tt s}"; \
		if [ -n "$$line" ]; then \
			f=$${line%% *}; t=$${line##* }; p=$$((t - f)); \
			if [ $$st = failed ] && [ $$f = 0 ]; then f=1; fi; \
			echo "stage $$s ($$d): $$p passed, $$f failed ($$tm)"; \
		elif [ $$st = failed ]; then \
			p=0; f=1; echo "stage $$s ($$d): FAILED before any test ran (see above; $$tm)"; \
		else \
			p=0; f=0; echo "stage $$s ($$d): no tests ($$tm)"; \
		fi; \
		passed=$$((passed + p)); failed=$$((failed + f)); \
	done; \
	echo "stages: $$(( $$(date +%s) - start )) s in all (builds included)"; \
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
	@echo
	./scripts/demo-attach.sh $(BUILD_DIR)

# Minutes of model-based sequences and stress (not part of `make test`).
check-long: build
	USFT_MODEL_SEQS=3000 USFT_MODEL_STEPS=300 $(CTEST) --test-dir $(BUILD_DIR) -L model --output-on-failure --timeout 3600
	USFT_STRESS_SECONDS=30 $(CTEST) --test-dir $(BUILD_DIR) -L stress --output-on-failure --timeout 3600
	USFT_TORTURE_SECONDS=120 $(CTEST) --test-dir $(BUILD_DIR) -L torture --output-on-failure --timeout 3600
	USFT_TORTURE_SECONDS=120 USFT_OPTIONS=per_callsite_ops=1 $(BUILD_DIR)/tests/torture/torture

# Benchmarks: every table of docs/benchmarks.md, results in bench-results/.
# QUICK=1 for a run under two minutes.  Never part of `make test` (only the
# 1% smoke runs are, as ctest -L bench-smoke).
# PROGRAMS=1 adds the real-programs set (bench/programs.sh: apt-get source,
# builds, about 20 minutes).
QUICK ?= 0
PROGRAMS ?= 0
bench: build
	QUICK=$(QUICK) PROGRAMS=$(PROGRAMS) BUILD=$(BUILD_DIR) ./scripts/bench.sh

install: build
	$(CMAKE) --install $(BUILD_DIR) --prefix $(PREFIX)

clean:
	rm -rf $(sort $(foreach s,$(ALL_STAGES) $(TEST_STAGES),$(call stage_dir,$(s))) $(PRESET_DIRS))

help:
	@echo 'usft make targets (Debian 12; CMake + Ninja underneath):'
	@echo '  deps         check the Debian packages; install the missing ones when root,'
	@echo '               else print the sudo apt-get line and fail'
	@echo '  build        configure $(BUILD_DIR)/ (preset native: RelWithDebInfo, -Werror) once and build it (default)'
	@echo '  test         run the test stages [$(TEST_STAGES)] and print "N passed, M failed"'
	@echo '  test-STAGE   one stage: $(foreach s,$(TEST_STAGES),$(s)=$(call stage_dir,$(s))/)'
	@echo '  demo         build, then run $(DEMO)'
	@echo '  install      cmake --install $(BUILD_DIR) --prefix $(PREFIX)  (PREFIX=..., DESTDIR=...)'
	@echo '  clean        rm -rf the stage and preset build directories'
	@echo '  (the stages are the workflow presets: cmake --list-presets=all)'
	@echo 'variables: PREFIX JOBS CTEST_TIMEOUT GENERATOR KEEP_GOING=0|1 TEST_STAGES USFT_SKIP_DEPS=1'
