#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/test_plots.sh WORKDIR: scripts/bench-plots.sh on a results.csv of
# every section (made-up figures): a PNG per benchmark, labels not
# typeset (noenhanced), log scales on the bar charts, min..max error bars,
# and no gnuplot warning.
set -euo pipefail
W=${1:?usage: test_plots.sh WORKDIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$W"; mkdir -p "$W"
printf '# machine: x86_64 2 cpus, test\n# build: build (Test)\n' > "$W/machine.txt"
{
	echo "section,case,metric,value"
	for c in untraced:1.0 stub_call:1.5 direct_near:2.0 direct_far:9.0 list_16:30.0; do
		n=${c%%:*}; v=${c#*:}
		echo "ladder,$n,ns_per_call,$v"; echo "ladder,$n,ns_per_call_min,$v"
		echo "ladder,$n,ns_per_call_max,$(awk -v v="$v" 'BEGIN { print v * 1.2 }')"
	done
	for s in trigger trigger_acc; do
		for c in base:1000 fexit_call:90 fexit_jmp:270; do
			n=${c%%:*}; v=${c#*:}
			echo "$s,$n,mcalls_per_s,$v"; echo "$s,$n,mcalls_per_s_min,$((v - 5))"
			echo "$s,$n,mcalls_per_s_max,$((v + 5))"
		done
	done
	for n in 1 100 10000; do
		for m in single_ops per_tramp_ops; do
			echo "attach,${m}_$n,ms,$n"; echo "attach,${m}_$n,ms_min,$n"; echo "attach,${m}_$n,ms_max,$((n * 2))"
		done
	done
	for n in 0 16 64; do
		for m in list callsite; do
			echo "callsite,${m}_unrelated_$n,ns_per_call,$((n + 3))"
			echo "callsite,${m}_unrelated_$n,ns_per_call_min,$((n + 2))"
			echo "callsite,${m}_unrelated_$n,ns_per_call_max,$((n + 5))"
		done
	done
	for c in untraced:1 usft_function:3 uftrace_dynamic:40; do
		n=${c%%:*}; v=${c#*:}
		echo "peers,$n,ns_per_call,$v"; echo "peers,$n,ns_per_call_min,$v"; echo "peers,$n,ns_per_call_max,$((v + 1))"
	done
} > "$W/results.csv"
# bench/floor.sh's per-process lines, two processes
for r in 1 2; do
	for t in none usft_function uftrace; do
		for c in untraced:0 floor_event:10 floor_pair:20 traced:$((30 * r)); do
			echo "run=$r section=floor case=${c%%:*}_1t tool=$t threads=1 ns_per_call=1 added_ns=${c#*:} spread_ns=1"
		done
	done
done > "$W/floor.txt"
mkdir -p "$W/scale"
for n in 1000 10000; do
	for k in 1 2 3; do
		echo "section=scale case=sites_$n sites=$n init_ms=$((n / 100 * k)) enable_all_ms=$((n / 50)) disable_all_ms=$((n / 60))"
	done > "$W/scale/scale_$n.txt"
done
"$ROOT/scripts/bench-plots.sh" "$W"
fail=0
for p in ladder trigger trigger_acc attach callsite peers floor scale; do
	if [ ! -s "$W/$p.png" ] || [ "$(head -c 4 "$W/$p.png" | od -An -c | tr -d ' ')" != "211PNG" ]; then
		echo "FAIL: no $p.png"; fail=1
	fi
done
gp=$W/plot-data/plots.gp
grep -q 'noenhanced' "$gp" || { echo "FAIL: labels would be typeset (no noenhanced)"; fail=1; }
grep -q 'enhanced"' "$gp" && { echo "FAIL: an enhanced-text title"; fail=1; }
[ "$(grep -c 'set logscale y' "$gp")" -ge 4 ] || { echo "FAIL: bar charts without log scale"; fail=1; }
[ "$(grep -c 'yerror' "$gp")" -ge 6 ] || { echo "FAIL: figures without min..max bars"; fail=1; }
# the ladder's data carries the min..max columns
awk '$2 == "list_16" && $5 > $3 { ok = 1 } END { exit !ok }' "$W/plot-data/ladder.dat" ||
	{ echo "FAIL: ladder.dat has no spread"; fail=1; }
# floor: the traced row over the processes (30, 60: median 45), floors beside it, no "none" bar
grep -q '^0 usft_function_1t 45 30 60 10 20$' "$W/plot-data/floor.dat" &&
	! grep -q ' none_' "$W/plot-data/floor.dat" ||
	{ echo "FAIL: floor.dat:"; cat "$W/plot-data/floor.dat"; fail=1; }
grep -q '^10000 200 100 300 200 200 200 166 166 166$' "$W/plot-data/scale.dat" ||
	{ echo "FAIL: scale.dat:"; cat "$W/plot-data/scale.dat"; fail=1; }
[ ! -s "$W/plot-data/gnuplot.log" ] || { echo "FAIL: gnuplot said:"; cat "$W/plot-data/gnuplot.log"; fail=1; }
[ $fail = 0 ] && echo "PASS bench plots"
exit $fail
