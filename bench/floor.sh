#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/floor.sh - usft-bench-floor untraced, under `usft record -p function`,
# `-p function_graph` and `uftrace record`, the tools interleaved (A B C D
# A B C D ...), each process timing its own floor rows next to the traced
# row: every tracer figure as a multiple of the floor of its own run and
# against uftrace's, for 1 and 2 threads.
#
# The floor reads the TSC; usft's trace clock reads it only where the
# kernel's clocksource is the TSC (on a KVM guest on kvm-clock it reads the
# host's pvclock page, elsewhere clock_gettime(), as the kernel's local clock
# follows its sched_clock).  Where the clocksource is not the TSC, the *_tsc
# rows run usft with `-C counter` (the TSC forced) and the *_mono rows with
# `-C mono` (clock_gettime() on every event) beside the default ones, so the
# share of the clock in a row is seen in the same run.
#
#   bench/floor.sh [BUILD_DIR [OUT_DIR]]    (ROUNDS=3 SCALE=1 in the environment)
#
# Output: OUT_DIR/floor.txt (every line of every run) and a summary on stdout
# (key=value lines, then a markdown table).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
OUT=${2:-bench-results}
ROUNDS=${ROUNDS:-3}
SCALE=${SCALE:-1}
INNER=${INNER:-5}
B=$BUILD/bench/usft-bench-floor
USFT=$BUILD/inject/usft
mkdir -p "$OUT"
RAW=$OUT/floor.txt
: > "$RAW"
rm -f "$OUT/floor.clock"
[ -x "$B" ] || { echo "floor.sh: $B not built (make build)" >&2; exit 1; }

# ring per thread: usft's default (RING_KB unset; a full ring waits for
# the writer, nothing is dropped), a size in KiB, or "fit": every event of
# the run fits (400000 * SCALE calls per sample, INNER rounds, 2 samples per
# round on thread 0, warm-ups, 24 bytes per event), as before 2026-12-07
RING_KB=${RING_KB:-}
if [ "$RING_KB" = fit ]; then
	RING_KB=$(awk -v s="$SCALE" -v r="$INNER" 'BEGIN { printf "%d", 400000 * s * 1.1 * r * 2 * 24 / 1024 + 4096 }')
fi
RING=${RING_KB:+-b $RING_KB}
ARGS="--scale $SCALE --rounds $INNER"
tools=(none)
[ -x "$USFT" ] && tools+=(usft_function usft_function_graph)
CS=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo '?')
if [ -x "$USFT" ] && [ "$(uname -m)" = x86_64 ] && [ "$CS" != tsc ]; then
	echo "floor.sh: the kernel's clocksource is $CS, not tsc: the _tsc rows force the TSC (-C counter), the _mono rows clock_gettime() (-C mono)" >&2
	tools+=(usft_function_tsc usft_function_graph_tsc usft_function_mono usft_function_graph_mono)
fi
command -v uftrace >/dev/null && tools+=(uftrace) || echo "floor.sh: uftrace not installed: no uftrace row" >&2

cmd() {
	case $1 in
	none) echo "$B $ARGS --tool none" ;;
	usft_function) echo "$USFT record --prefault $RING -p function -l bench_traced -o $OUT/floor.usft $B $ARGS --tool usft_function" ;;
	usft_function_graph) echo "$USFT record --prefault $RING -p function_graph -l bench_traced -o $OUT/floor.usft $B $ARGS --tool usft_function_graph" ;;
	usft_function_tsc) echo "$USFT record -C counter --prefault $RING -p function -l bench_traced -o $OUT/floor.usft $B $ARGS --tool usft_function_tsc" ;;
	usft_function_graph_tsc) echo "$USFT record -C counter --prefault $RING -p function_graph -l bench_traced -o $OUT/floor.usft $B $ARGS --tool usft_function_graph_tsc" ;;
	usft_function_mono) echo "$USFT record -C mono --prefault $RING -p function -l bench_traced -o $OUT/floor.usft $B $ARGS --tool usft_function_mono" ;;
	usft_function_graph_mono) echo "$USFT record -C mono --prefault $RING -p function_graph -l bench_traced -o $OUT/floor.usft $B $ARGS --tool usft_function_graph_mono" ;;
	uftrace) echo "uftrace record --no-pager -P ^bench_traced$ -d $OUT/floor.uftrace.data $B $ARGS --tool uftrace" ;;
	esac
}

for ((r = 1; r <= ROUNDS; r++)); do
	for t in "${tools[@]}"; do
		# shellcheck disable=SC2046
		$(cmd "$t") 2> "$OUT/floor.err" | sed "s/^/run=$r /" >> "$RAW"
		# usft record's summary line: "usft: N events, M lost, ..."
		lost=$(sed -n 's/^usft: [0-9]* events, \([0-9]*\) lost.*/\1/p' "$OUT/floor.err" | head -1)
		[ -n "$lost" ] && echo "run=$r lost tool=$t events_lost=$lost" >> "$RAW"
		[ "$t" = usft_function ] && [ ! -s "$OUT/floor.clock" ] &&
			"$USFT" info -i "$OUT/floor.usft" 2>/dev/null | sed -n 's/^# clock *: /clock=/p' | head -1 > "$OUT/floor.clock"
	done
	echo "floor.sh: round $r/$ROUNDS" >&2
done

grep -m1 'cpu:' "$RAW" | sed 's/^run=[0-9]* //'
echo "# kernel clocksource: $CS; usft's default trace clock: $(sed -n 's/^clock=//p' "$OUT/floor.clock" 2>/dev/null)"
echo "# load average now: $(cut -d' ' -f1-3 /proc/loadavg); $ROUNDS processes per tool, $INNER rounds inside each"
# median over the processes of each (tool, case) in-process median
awk '
function med(key,   n, i, j, t, a) {
	n = split(vals[key], a, " ");
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2;
}
$2 ~ /^section=floor/ {
	for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
	key = f["tool"] SUBSEP f["case"];
	vals[key] = vals[key] " " f["added_ns"]; spr[key] = spr[key] " " f["spread_ns"];
	if (!(f["tool"] in seen)) { seen[f["tool"]] = 1; order[++nt] = f["tool"] }
}
$2 == "lost" { split($4, kv, "="); lost[substr($3, 6)] += kv[2] }
END {
	for (th = 1; th <= 2; th++) {
		u = "uftrace" SUBSEP "traced_" th "t";
		uf = (u in vals) ? med(u) : "";
		for (k = 1; k <= nt; k++) {
			tool = order[k];
			if (!((tool SUBSEP "traced_" th "t") in vals)) continue;
			tr = med(tool SUBSEP "traced_" th "t"); ev = med(tool SUBSEP "floor_event_" th "t");
			pr = med(tool SUBSEP "floor_pair_" th "t");
			xe = (ev > 0) ? sprintf("%.2f", tr / ev) : "-";
			xp = (pr > 0) ? sprintf("%.2f", tr / pr) : "-";
			vs = (uf != "" && tr > 0 && tool != "uftrace" && tool != "none") ? sprintf("%.1f", uf / tr) : "-";
			printf "summary tool=%s threads=%d traced_added_ns=%.2f floor_event_ns=%.2f floor_pair_ns=%.2f x_floor_event=%s x_floor_pair=%s uftrace_per_tool=%s lost=%d\n", tool, th, tr, ev, pr, xe, xp, vs, lost[tool];
		}
	}
}' "$RAW" | tee "$OUT/floor-summary.txt"
echo
echo "| tool | threads | added ns per call | floor event | floor pair | x floor event | x floor pair | uftrace / tool | lost |"
echo "|---|---|---|---|---|---|---|---|---|"
sed -n 's/^summary //p' "$OUT/floor-summary.txt" | awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[i] = kv[2] } printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9] }'
