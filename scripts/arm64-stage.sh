#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# scripts/arm64-stage.sh DIR [CMAKE ARGS...] - one arm64 test stage of
# `make test`: set up the cross toolchain and qemu-user (setup-arm64.sh),
# cross-configure DIR with cmake/aarch64-linux-gnu.cmake (once), build, and
# run ctest there under qemu with a per-test timeout and a hard SIGKILL
# timeout around the whole run (criterion under qemu can spin forever; see
# docs/arm64.md).  The ctest output goes to DIR/usft-ctest-$STAGE.log for the
# summary of `make test`.
#
# On a machine that cannot run arm64 binaries the stage prints a loud
# SKIPPED line and succeeds - except under CI=true, where it fails.
#
# Environment: GENERATOR (Ninja), JOBS (2), CTEST_TIMEOUT (per test, 300),
# ARM64_CTEST (ctest selection, "-L unit|conformance"),
# ARM64_KILL_TIMEOUT (whole ctest run, 900 s), STAGE (log name, arm64).
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${1:?usage: $0 BUILD_DIR [CMAKE ARGS...]}
shift
gen=${GENERATOR:-Ninja}
jobs=${JOBS:-2}
per_test=${CTEST_TIMEOUT:-300}
kill_after=${ARM64_KILL_TIMEOUT:-900}
sel=${ARM64_CTEST:--L unit|conformance}
log="$dir/usft-ctest-${STAGE:-arm64}.log"

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

gen_file=build.ninja
case "$gen" in Ninja*) ;; *) gen_file=Makefile ;; esac
if [ ! -f "$dir/$gen_file" ]; then
	echo "+ cmake -S . -B $dir -G $gen -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake $*"
	cmake -S . -B "$dir" -G "$gen" -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake "$@"
elif [ $# -gt 0 ]; then
	# an existing build directory gets the stage's current options (the
	# Makefile's <stage>_CMAKE may have changed since it was configured)
	echo "+ cmake -S . -B $dir $*"
	cmake -S . -B "$dir" "$@" >/dev/null
fi
echo "+ cmake --build $dir"
cmake --build "$dir"

# shellcheck disable=SC2206
sel_args=($sel)
echo "+ timeout -s KILL $kill_after ctest --test-dir $dir --output-on-failure -j$jobs --timeout $per_test ${sel_args[*]}"
set +e
timeout -s KILL "$kill_after" ctest --test-dir "$dir" --output-on-failure -j"$jobs" \
	--timeout "$per_test" "${sel_args[@]}" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" = 137 ]; then
	echo "## arm64 stage ($dir): ctest KILLED after ${kill_after}s (hung under qemu?)" | tee -a "$log"
fi
exit "$rc"
