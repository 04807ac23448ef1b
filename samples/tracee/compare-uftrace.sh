#!/bin/bash
# SPDX-License-Identifier: MIT
#
# compare-uftrace.sh BUILD_DIR [ROUNDS] [CALLS]
#
# Per-call cost of the usft tracers against `uftrace record -P .` on the same
# binary (samples/tracee/tracee-loop, built with -fpatchable-function-entry=5),
# measured in one run: each round runs every case once, in turn, so all of
# them see the same machine state; the loop times itself (calls only, not
# start-up or writing the trace) and the median over rounds is reported.
# usft runs with its default rings (a full ring waits for the writer, so
# no event is lost; BUF=KiB sets a ring size) and both tools write to a
# tmpfs.  uftrace is a benchmark dependency only
# (Debian package uftrace).  Never a timed test.
set -euo pipefail
build=${1:?usage: compare-uftrace.sh BUILD_DIR [ROUNDS] [CALLS]}
rounds=${2:-5}
calls=${3:-20000000}
usft=$build/inject/usft
loop=$build/samples/tracee/tracee-loop
command -v uftrace >/dev/null || { echo "uftrace not installed (apt-get install uftrace)" >&2; exit 1; }
tmp=$(mktemp -d /dev/shm/usft-cmp.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# -b only when BUF (KiB) is given
bufopt=${BUF:+-b $BUF}

ns() { sed -n 's/^ns_per_call=//p'; }

declare -A res
cases=(untraced usft_function usft_function_mono usft_graph usft_graph_call uftrace)
for r in $(seq 1 "$rounds"); do
	res[untraced]+=" $("$loop" "$calls" time 2>&1 >/dev/null | ns)"
	res[usft_function]+=" $("$usft" record -q --prefault -p function $bufopt -o "$tmp/f.dat" "$loop" "$calls" time 2>&1 >/dev/null | ns)"
	res[usft_function_mono]+=" $("$usft" record -q --prefault -p function -C mono $bufopt -o "$tmp/m.dat" "$loop" "$calls" time 2>&1 >/dev/null | ns)"
	res[usft_graph]+=" $("$usft" record -q --prefault -p function_graph $bufopt -o "$tmp/g.dat" "$loop" "$calls" time 2>&1 >/dev/null | ns)"
	# the kernel's return path: every hooked return through return_to_handler
	res[usft_graph_call]+=" $("$usft" record -q --prefault -p function_graph -O graph_jmp=0 $bufopt -o "$tmp/c.dat" "$loop" "$calls" time 2>&1 >/dev/null | ns)"
	res[uftrace]+=" $(uftrace record -d "$tmp/uftrace.data" -P . "$loop" "$calls" time 2>&1 >/dev/null | ns)"
	rm -rf "$tmp"/*
	echo "round $r/$rounds" >&2
done
# lost events of the last configuration, to show nothing was dropped
"$usft" record -p function_graph $bufopt -o "$tmp/g.dat" "$loop" "$calls" >/dev/null

median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
declare -A med
echo "# $calls calls per run, $rounds rounds, median ns per call (loop time / calls)"
for c in "${cases[@]}"; do
	med[$c]=$(echo "${res[$c]}" | median)
	printf 'case=%-20s ns_per_call=%8.2f  rounds:%s\n' "$c" "${med[$c]}" "${res[$c]}"
done
u=${med[untraced]}
awk -v u="$u" -v f="${med[usft_function]}" -v m="${med[usft_function_mono]}" \
    -v g="${med[usft_graph]}" -v c="${med[usft_graph_call]}" -v t="${med[uftrace]}" 'BEGIN {
	printf "added ns: usft function %.2f, function (mono clock) %.2f, function_graph %.2f (graph_jmp=0: %.2f), uftrace %.2f\n", f-u, m-u, g-u, c-u, t-u
	printf "ratio usft_function/uftrace = 1/%.1f (target <= 1/6)\n", (t-u)/(f-u)
	printf "ratio usft_function_mono/uftrace = 1/%.1f\n", (t-u)/(m-u)
	printf "ratio usft_graph/uftrace = 1/%.1f (target <= 1/3)\n", (t-u)/(g-u)
	printf "ratio usft_graph_call/uftrace = 1/%.1f\n", (t-u)/(c-u)
}'
