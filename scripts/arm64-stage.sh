#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# scripts/arm64-stage.sh PRESET DIR - one arm64 test stage of `make test`:
# set up the cross toolchain and qemu-user (setup-arm64.sh), configure DIR
# from the configure preset PRESET of CMakePresets.json (arm64 or
# arm64-callops: cmake/aarch64-linux-gnu.cmake and the stage's options;
# DIR is that preset's binaryDir), build, and run its test preset under qemu
# inside a hard SIGKILL timeout around the whole run (criterion under qemu
# can spin forever; see docs/arm64.md).  The ctest output goes to
# DIR/usft-ctest-$STAGE.log for the summary of `make test`.
#
# On a machine that cannot run arm64 binaries the stage prints a loud
# SKIPPED line and succeeds - except under CI=true, where it fails.
#
# Environment: GENERATOR (empty: the preset's), SUBSET (1: build only what
# the stage's tests and the docs pages that use this build need, as
# scripts/stage-targets.py lists it; with Ninja only), CTEST_FLAGS (extra ctest
# arguments, e.g. -j4 --timeout 600), ARM64_KILL_TIMEOUT (whole ctest run,
# 900 s), STAGE (log name, PRESET).
set -euo pipefail
cd "$(dirname "$0")/.."

preset=${1:?usage: $0 PRESET BUILD_DIR}
dir=${2:?usage: $0 PRESET BUILD_DIR}
kill_after=${ARM64_KILL_TIMEOUT:-900}
log="$dir/usft-ctest-${STAGE:-$preset}.log"

mkdir -p "$dir"
rm -f "$log"
echo "+ scripts/setup-arm64.sh"
USFT_ARM64_SKIP_MARKER="$dir/.arm64-skip" USFT_ARM64_READY_MARKER="$dir/.arm64-ready" \
	bash scripts/setup-arm64.sh
if [ -f "$dir/.arm64-skip" ]; then
	reason=$(head -n 1 "$dir/.arm64-skip")
	if [ "${CI:-}" = true ]; then
		echo "################################################################" >&2
		echo "## arm64 stage ($dir): FAILED - CI=true but arm64 cannot run here: $reason" >&2
		echo "################################################################" >&2
		exit 1
	fi
	echo "################################################################"
	echo "## arm64 stage ($dir): SKIPPED - $reason"
	echo "################################################################"
	echo "SKIPPED: $reason" >"$log"
	exit 0
fi

gen_args=()
if [ -n "${GENERATOR:-}" ]; then gen_args=(-G "$GENERATOR"); fi
# every run: an existing build directory gets the preset's current options
echo "+ cmake --preset $preset ${gen_args[*]}"
cmake --preset "$preset" "${gen_args[@]}" >"$dir/usft-configure.log" 2>&1 \
	|| { cat "$dir/usft-configure.log"; exit 1; }
targets=()
if [ "${SUBSET:-}" = 1 ] && [ -f "$dir/build.ninja" ]; then
	# shellcheck disable=SC2207
	targets=($(python3 scripts/stage-targets.py --cmake-args "$preset" "$dir"))
fi
echo "+ cmake --build --preset $preset ${targets[*]}"
cmake --build --preset "$preset" "${targets[@]}"

# shellcheck disable=SC2206
extra=(${CTEST_FLAGS:-})
echo "+ timeout -s KILL $kill_after ctest --preset $preset ${extra[*]}"
set +e
timeout -s KILL "$kill_after" ctest --preset "$preset" "${extra[@]}" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" = 137 ]; then
	echo "## arm64 stage ($dir): ctest KILLED after ${kill_after}s (hung under qemu?)" | tee -a "$log"
fi
exit "$rc"
