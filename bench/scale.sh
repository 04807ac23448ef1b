#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/scale.sh - the runtime against 10^3..10^5 sites: generates a C file
# of N patchable functions for each N, builds it with bench/scale.c against
# BUILD_DIR's libusft, runs it (start-up, memory per site, enable/disable
# one ops on every site; wall and CPU time, PROCS=3 processes per N, the
# median kept), and fits the slope of each CPU-time figure in N.
#
#   bench/scale.sh [BUILD_DIR [OUT_DIR]]   (SIZES="1000 10000 100000" ROUNDS=5)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
OUT=${2:-bench-results}
SIZES=${SIZES:-1000 3000 10000 30000 100000}
ROUNDS=${ROUNDS:-5}
D=$OUT/scale
mkdir -p "$D"
case $(uname -m) in
aarch64) PFE=-fpatchable-function-entry=2 ;;
*) PFE=-fpatchable-function-entry=5 ;;
esac
LIB=$BUILD/runtime
[ -e "$LIB/libusft.so" ] || { echo "scale.sh: $LIB/libusft.so not built (make build)" >&2; exit 1; }

# N -> $D/funcs_N.o: N functions in files of 5000 (one huge file takes gcc
# superlinear time), -O0 (a site is a site), and scale_call_all() calling each
gen() {
	local n=$1 per=5000 k objs=()
	for ((k = 0; k * per < n; k++)); do
		awk -v lo=$((k * per)) -v hi=$(((k + 1) * per < n ? (k + 1) * per : n)) 'BEGIN {
			for (i = lo; i < hi; i++) printf "long f%d(long x) { return x + %d; }\n", i, i % 7 + 1;
		}' > "$D/funcs_${n}_$k.c"
		cc -O0 $PFE -c "$D/funcs_${n}_$k.c" -o "$D/funcs_${n}_$k.o"
		objs+=("$D/funcs_${n}_$k.o")
	done
	awk -v n="$n" 'BEGIN {
		for (i = 0; i < n; i++) printf "long f%d(long);\n", i;
		print "static long (*const tab[])(long) = {";
		for (i = 0; i < n; i++) printf "\tf%d,\n", i;
		print "};";
		print "long scale_call_all(long x) {";
		print "\tlong s = 0;";
		print "\tfor (unsigned long i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)\n\t\ts += tab[i](x);";
		print "\treturn s;\n}";
	}' > "$D/funcs_${n}_tab.c"
	cc -O1 -c "$D/funcs_${n}_tab.c" -o "$D/funcs_${n}_tab.o"
	ld -r -o "$D/funcs_$n.o.tmp" "${objs[@]}" "$D/funcs_${n}_tab.o" && mv "$D/funcs_$n.o.tmp" "$D/funcs_$n.o"
}

: > "$D/scale.txt"
cc -O2 -Iruntime/include -I"$BUILD/runtime/include" -c bench/scale.c -o "$D/scale.o"
cc -O2 -c bench/cpu.c -o "$D/cpu.o"
for n in $SIZES; do
	if [ ! -s "$D/funcs_$n.o" ]; then
		echo "scale.sh: building $n functions ..." >&2
		gen "$n"
	fi
	cc -o "$D/scale_$n" "$D/scale.o" "$D/cpu.o" "$D/funcs_$n.o" -L"$LIB" -lusft -Wl,-rpath,"$PWD/$LIB"
	# start-up happens once per process: PROCS processes, the median one kept
	for ((k = 0; k < ${PROCS:-3}; k++)); do "$D/scale_$n" "$ROUNDS"; done > "$D/scale_$n.txt"
	grep -m1 cpu: "$D/scale_$n.txt" >> "$D/scale.txt"
	grep '^section=scale' "$D/scale_$n.txt" | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^init_cpu_ms=/) { split($i, kv, "="); print kv[2], $0 } }' |
		sort -g | awk '{ a[NR] = $0 } END { print a[int((NR + 1) / 2)] }' | cut -d' ' -f2- | tee -a "$D/scale.txt"
done
grep -m1 'cpu:' "$D/scale.txt"
echo "# load average now: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| sites | start-up ms (CPU ms) | before main() CPU ms | RSS B/site | heap B/site | enable all ms (CPU) | disable all ms (CPU) |"
echo "|---|---|---|---|---|---|---|"
awk '$1 == "section=scale" { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
	printf "| %s | %s (%s) | %s | %s | %s | %s (%s) | %s (%s) |\n", v["sites"], v["init_ms"], v["init_cpu_ms"], v["pre_main_cpu_ms"], v["rss_bytes_per_site"], v["heap_bytes_per_site"], v["enable_all_ms"], v["enable_all_cpu_ms"], v["disable_all_ms"], v["disable_all_cpu_ms"] }' "$D/scale.txt"
# least-squares slope and intercept of each figure in N (per 1000 sites)
awk '$1 == "section=scale" { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
	n++; x[n] = v["sites"] / 1000; a[n] = v["init_cpu_ms"]; b[n] = v["enable_all_cpu_ms"]; c[n] = v["disable_all_cpu_ms"] }
	function fit(y, name,   i, sx, sy, sxx, sxy, s) {
		sx = sy = sxx = sxy = 0;
		for (i = 1; i <= n; i++) { sx += x[i]; sy += y[i]; sxx += x[i] * x[i]; sxy += x[i] * y[i] }
		s = (n * sxy - sx * sy) / (n * sxx - sx * sx);
		printf "slope %s=%.3f CPU ms per 1000 sites (intercept %.2f ms)\n", name, s, (sy - s * sx) / n;
	}
	END { if (n > 1) { fit(a, "init"); fit(b, "enable_all"); fit(c, "disable_all") } }' "$D/scale.txt"
