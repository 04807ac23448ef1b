#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/record_ab.sh BUILD [CALLS] [ROUNDS]: what crash-safe recording costs
# a traced call.  `usft record` runs samples/tracee/loop (CALLS calls of one
# function, default 5,000,000) under the function and function_graph tracers,
# with shared (crash-safe, the default) and private rings, interleaved in
# each of ROUNDS rounds (default 5), and prints per configuration the median
# of loop's ns_per_call (CPU time of the calling thread in the loop), the
# events and lost counts, and the recording's max RSS (GNU time's %M: the
# largest of usft and the tracee), as key=value lines.  RINGS (default
# "shared private") picks the ring kinds; "given" is shared rings that give
# their pages back as they are written out (USFT_RING_KEEP=0), whatever
# their size (docs/tracers.md, "Memory"); "old" is shared rings with the
# defaults before the lossless policy (64 MiB, --drop).
set -eu
build=${1:?usage: record_ab.sh BUILD [CALLS] [ROUNDS]}
calls=${2:-5000000}
rounds=${3:-5}
usft=$build/inject/usft
loop=$build/samples/tracee/tracee-loop
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for r in $(seq "$rounds"); do
	for tracer in function function_graph; do
		for rings in ${RINGS:-shared private}; do
			kind=$rings keep= extra=
			[ "$rings" = given ] && kind=shared keep=0
			[ "$rings" = old ] && kind=shared extra="-b 65536 --drop"
			# shellcheck disable=SC2086 # $extra is two options or none
			USFT_RING_KEEP=$keep /usr/bin/time -f "rss_kb=%M" -o "$tmp/time" \
				"$usft" record -p "$tracer" --rings "$kind" $extra -o "$tmp/t.dat" -- \
				"$loop" "$calls" time >/dev/null 2>"$tmp/err"
			ns=$(sed -n 's/^ns_per_call=//p' "$tmp/err")
			sum=$(grep '^usft: [0-9]* events' "$tmp/err" | sed 's/usft: \([0-9]*\) events, \([0-9]*\) lost.*/\1 \2/')
			echo "$tracer $rings $ns $sum $(sed -n 's/^rss_kb=//p' "$tmp/time")" >>"$tmp/all"
		done
	done
done
for tracer in function function_graph; do
	for rings in ${RINGS:-shared private}; do
		grep "^$tracer $rings " "$tmp/all" | sort -k3 -n | awk -v t="$tracer" -v r="$rings" '
			{ ns[NR] = $3; ev = $4; lost += $5; if ($6 > rss) rss = $6 }
			END { printf "record_%s_%s_ns_per_call=%s\nrecord_%s_%s_events=%s\nrecord_%s_%s_lost_total=%d\nrecord_%s_%s_max_rss_kb=%d\n",
				t, r, ns[int((NR + 1) / 2)], t, r, ev, t, r, lost, t, r, rss }'
	done
done
