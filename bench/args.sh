#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# args.sh BUILD_DIR [ROUNDS] [CALLS]
#
# What -A/-R cost (docs/tracers.md, Arguments and return values): the
# per-call time of tracee-loop's work(long) untraced, under usft
# function_graph, under function_graph with `-A work@arg1 -R work@retval`,
# and the same two under `uftrace record -P .` (uftrace's -A/-R), each the
# median of ROUNDS runs of CALLS calls (CPU time of the calling thread in
# the call loop, as compare-uftrace.sh).  One key=value line per case, then
# the ratios the issue asks for.  A benchmark, never a timed test.
set -euo pipefail
build=${1:?usage: args.sh BUILD_DIR [ROUNDS] [CALLS]}
rounds=${2:-3}
calls=${3:-2000000}
usft=$build/inject/usft
loop=$build/samples/tracee/tracee-loop
command -v uftrace >/dev/null || { echo "uftrace not installed (apt-get install uftrace)" >&2; exit 1; }
tmp=$(mktemp -d /dev/shm/usft-args.XXXXXX 2>/dev/null || mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ns() { sed -n 's/^ns_per_call=//p'; }
declare -A res
for ((r = 0; r < rounds; r++)); do
	res[untraced]+=" $("$loop" "$calls" time 2>&1 >/dev/null | ns)"
	res[usft_graph]+=" $("$usft" record -q -p function_graph -o "$tmp/g.dat" -- "$loop" "$calls" time 2>&1 >/dev/null | ns)"
	res[usft_args]+=" $("$usft" record -q -p function_graph -A 'work@arg1' -R 'work@retval' -o "$tmp/a.dat" -- "$loop" "$calls" time 2>&1 >/dev/null | ns)"
	res[uftrace_graph]+=" $(uftrace record -d "$tmp/u.data" -P . "$loop" "$calls" time 2>&1 >/dev/null | ns)"
	res[uftrace_args]+=" $(uftrace record -d "$tmp/ua.data" -P . -A 'work@arg1' -R 'work@retval' "$loop" "$calls" time 2>&1 >/dev/null | ns)"
	rm -rf "$tmp"/*
done
declare -A med
for k in untraced usft_graph usft_args uftrace_graph uftrace_args; do
	med[$k]=$(tr ' ' '\n' <<<"${res[$k]}" | sed '/^$/d' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
	echo "args_$k ns_per_call=${med[$k]} rounds=$rounds calls=$calls"
done
awk -v u="${med[untraced]}" -v g="${med[usft_graph]}" -v a="${med[usft_args]}" \
    -v tg="${med[uftrace_graph]}" -v ta="${med[uftrace_args]}" 'BEGIN {
	printf "added ns: usft function_graph %.2f, usft -A/-R %.2f (%.2fx its function_graph); uftrace -P . %.2f, uftrace -A/-R %.2f\n",
		g-u, a-u, (a-u)/(g-u), tg-u, ta-u
	printf "usft -A/-R against uftrace -A/-R: %.2fx the added time\n", (a-u)/(ta-u)
}'
