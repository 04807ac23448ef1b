#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/lossless_ab.sh BUILD_A BUILD_B [CALLS] [ROUNDS]: what the lossless
# policy's wait costs a traced thread, two builds side by side (e.g. a
# change to the wait and the tree before it), rounds interleaved.
#
# `usft record -p function --lossless` runs samples/tracee/loop (CALLS calls
# of one function, default 2,000,000) with rings of BUFS KiB a thread
# (default "16 256 32768": small rings wait for the writer all the time,
# the default one does not), and prints per build and ring size the median
# (min..max) of the wall time of the recording, loop's ns_per_call (CPU
# time of the calling thread: a wait costs wall time, not CPU), and the
# events and lost counts.  Prints the CPU and the load first.  Never part of
# make test (timings are never asserted).
set -eu
a=${1:?usage: lossless_ab.sh BUILD_A BUILD_B [CALLS] [ROUNDS]}
b=${2:?usage: lossless_ab.sh BUILD_A BUILD_B [CALLS] [ROUNDS]}
calls=${3:-2000000}
rounds=${4:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "# lossless_ab: cpu: $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1)," \
	"$(nproc) cpus online, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# A=$a B=$b calls=$calls rounds=$rounds"
for _ in $(seq "$rounds"); do
	for kb in ${BUFS:-16 256 32768}; do
		for side in A B; do
			build=$a
			[ "$side" = B ] && build=$b
			/usr/bin/time -f "wall=%e" -o "$tmp/time" \
				"$build/inject/usft" record -p function --lossless -b "$kb" \
				-o "$tmp/t.dat" -- "$build/samples/tracee/tracee-loop" "$calls" time \
				>/dev/null 2>"$tmp/err"
			ns=$(sed -n 's/^ns_per_call=//p' "$tmp/err")
			sum=$(grep '^usft: [0-9]* events' "$tmp/err" |
				sed 's/usft: \([0-9]*\) events, \([0-9]*\) lost.*/\1 \2/')
			echo "$kb $side $(sed -n 's/^wall=//p' "$tmp/time") $ns $sum" >>"$tmp/all"
		done
	done
done
python3 - "$tmp/all" <<'EOF'
import statistics
import sys
rows = {}
for line in open(sys.argv[1]):
    kb, side, wall, ns, ev, lost = line.split()
    rows.setdefault((int(kb), side), []).append((float(wall), float(ns), int(ev), int(lost)))
def fmt(v, f="%.3f"):
    return (f + " (" + f + ".." + f + ")") % (statistics.median(v), min(v), max(v))
for (kb, side), v in sorted(rows.items()):
    print("buffer_kb=%-6d %s wall_s=%s ns_per_call=%s events=%d lost=%d" % (
        kb, side, fmt([x[0] for x in v]), fmt([x[1] for x in v], "%.1f"),
        statistics.median([x[2] for x in v]), max(x[3] for x in v)))
EOF
