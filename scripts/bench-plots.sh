#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/bench-plots.sh OUT: one PNG per benchmark of `make bench` from
# OUT/results.csv (scripts/bench.sh writes it; gnuplot-nox draws, `make deps`
# installs it).  Every figure shows each case's median with the smallest
# and largest of its rounds as an error bar, names its machine and build,
# and uses a log scale where a baseline would dwarf the differences that
# matter; labels are printed as written (no "_" subscripts).
#   ladder.png       seed 000: ns per call of each dispatch case (log)
#   trigger.png      seed 002: million calls per second, result dropped (log)
#   trigger_acc.png  the same with the results summed (log)
#   attach.png       seed 001: attach + detach ms vs functions (log-log)
#   callsite.png     ns per call vs unrelated ops, list walk vs per-callsite
#   peers.png        ns per call of the same workload under each tool (log)
#   floor.png        the tracers' added ns per call against the floor (the
#                    cheapest timestamped event and entry/exit pair), 1 and 2
#                    threads, from OUT/floor.txt (bench/floor.sh) (log)
#   scale.png        start-up, enable all and disable all ms vs sites, over
#                    the processes of bench/scale.sh (OUT/scale/scale_N.txt)
#                    (log-log)
set -euo pipefail
OUT=${1:?usage: bench-plots.sh OUT}
CSV=$OUT/results.csv
log() { echo "bench: $*" >&2; }
if ! command -v gnuplot >/dev/null; then
	log "gnuplot not installed: tables only (make deps, or apt-get install gnuplot-nox, for the plots)"
	exit 0
fi
[ -s "$CSV" ] || { log "no $CSV: nothing to plot"; exit 0; }
# the machine line of every figure; gnuplot strings are in double quotes
MACHINE=$(sed -n 's/^# machine: //p' "$OUT/machine.txt" 2>/dev/null | tr -d '"\\')
BUILD=$(sed -n 's/^# build: //p' "$OUT/machine.txt" 2>/dev/null | tr -d '"\\' | cut -c1-70)
D=$OUT/plot-data
mkdir -p "$D"

# section metric -> "index case median min max" rows, in the CSV's order
bars() {
	awk -F, -v s="$1" -v m="$2" '
	$1 == s && $3 == m { if (!($2 in v)) order[++n] = $2; v[$2] = $4 }
	$1 == s && $3 == m "_min" { lo[$2] = $4 }
	$1 == s && $3 == m "_max" { hi[$2] = $4 }
	END { for (i = 1; i <= n; i++) { c = order[i];
		printf "%d %s %s %s %s\n", i - 1, c, v[c], (c in lo) ? lo[c] : v[c], (c in hi) ? hi[c] : v[c] } }' "$CSV"
}
# section metric prefix -> "N median min max" rows of the cases PREFIX<N>
series() {
	bars "$1" "$2" | awk -v p="$3" 'index($2, p) == 1 { n = substr($2, length(p) + 1); if (n ~ /^[0-9]+$/) print n, $3, $4, $5 }'
}

bars ladder ns_per_call > "$D/ladder.dat"
bars trigger mcalls_per_s > "$D/trigger.dat"
bars trigger_acc mcalls_per_s > "$D/trigger_acc.dat"
series attach ms single_ops_ > "$D/attach_single.dat"
series attach ms per_tramp_ops_ > "$D/attach_per.dat"
series callsite ns_per_call list_unrelated_ > "$D/callsite_list.dat"
series callsite ns_per_call callsite_unrelated_ > "$D/callsite_cs.dat"
bars peers ns_per_call > "$D/peers.dat"
# floor.txt: per process "section=floor case=C_Nt tool=T ... added_ns=V":
# per tool and thread count the traced row's median, min and max over the
# processes, and the median floor event and floor pair beside it
if [ -s "$OUT/floor.txt" ]; then
	awk '
	function med(s,   n, a, i, j, t) {
		n = split(s, a, " ");
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
		lo = a[1]; hi = a[n];
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2;
	}
	$2 == "section=floor" {
		for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
		c = f["case"]; th = c; sub(/^.*_/, "", th); kind = c; sub(/_[0-9]+t$/, "", kind);
		key = f["tool"] "_" th;
		if (f["tool"] == "none" && kind == "traced") next;
		if (!(key in seen) && kind == "traced") { seen[key] = 1; order[++n] = key }
		v[key, kind] = v[key, kind] " " f["added_ns"];
	}
	END {
		for (i = 1; i <= n; i++) {
			k = order[i]; m = med(v[k, "traced"]); l = lo; h = hi;
			printf "%d %s %s %s %s %s %s\n", i - 1, k, m, l, h, med(v[k, "floor_event"]), med(v[k, "floor_pair"]);
		}
	}' "$OUT/floor.txt" > "$D/floor.dat"
fi

# scale_N.txt: one "section=scale case=sites_N ... init_ms= enable_all_ms= disable_all_ms=" per process
for f in "$OUT"/scale/scale_*.txt; do
	[ -s "$f" ] || continue
	awk '
	function st(s,   n, a, i, j, t) {
		n = split(s, a, " ");
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
		return (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2) " " a[1] " " a[n];
	}
	$1 == "section=scale" {
		for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
		n = f["sites"]; a = a " " f["init_ms"]; e = e " " f["enable_all_ms"]; d = d " " f["disable_all_ms"]
	}
	END { if (n) print n, st(a), st(e), st(d) }' "$f"
done | sort -n > "$D/scale.dat"

# a bar chart of D/NAME.dat (index case median min max): boxes, min-max bars, values on top
bar_plot() {	# name, title, ylabel
	cat <<GP
set title "$2\n$MACHINE; $BUILD"
set ylabel "$3"
set xtics rotate by -35 left
set logscale y
set yrange [*:*]
set offsets 0.5, 0.5, 0, 0
set boxwidth 0.6
set style fill solid 0.5 border -1
set grid ytics mytics
plot "$D/$1.dat" using 1:3:xtic(2) with boxes lc rgb "#4a7ebb" title "median of the rounds", \\
     "" using 1:3:4:5 with yerrorbars lc rgb "black" pt 0 title "min .. max of the rounds", \\
     "" using 1:(\$5):(sprintf("%.4g", \$3)) with labels offset 0,0.7 font ",9" notitle
GP
}

{
	echo 'set terminal pngcairo size 1000,600 font "DejaVu Sans,10" noenhanced'
	echo 'set encoding utf8'
	echo 'set key top left'
	if [ -s "$D/ladder.dat" ]; then
		echo "set output \"$OUT/ladder.png\""
		bar_plot ladder "usft-bench-ladder (seed 000): cost per call of each dispatch case, log scale" "ns per call (log)"
	fi
	for t in trigger trigger_acc; do
		[ -s "$D/$t.dat" ] || continue
		echo "set output \"$OUT/$t.png\""
		bar_plot "$t" "usft-bench-trigger (seed 002, $t): million calls per second, log scale" "M calls/s (log)"
	done
	if [ -s "$D/peers.dat" ]; then
		echo "set output \"$OUT/peers.png\""
		bar_plot peers "peers: the same workload under each tool, cost per call, log scale" "ns per call (log)"
	fi
	if [ -s "$D/floor.dat" ]; then
		cat <<GP
set output "$OUT/floor.png"
set title "usft-bench-floor: added ns per traced call against the floor of the same process, log scale\n$MACHINE; $BUILD"
set ylabel "added ns per call (log)"
set xtics rotate by -35 left
set logscale y; set yrange [1:*]; set offsets 0.5, 0.5, 0, 0; set boxwidth 0.6
set style fill solid 0.5 border -1; set grid ytics mytics
plot "$D/floor.dat" using 1:3:xtic(2) with boxes lc rgb "#4a7ebb" title "traced call (median of the processes)", \\
     "" using 1:3:4:5 with yerrorbars lc rgb "black" pt 0 title "min .. max of the processes", \\
     "" using 1:6 with points pt 7 ps 1.5 lc rgb "#d62728" title "floor: one timestamped event", \\
     "" using 1:7 with points pt 5 ps 1.5 lc rgb "#2ca02c" title "floor: an entry/exit pair"
GP
	fi
	if [ -s "$D/scale.dat" ]; then
		cat <<GP
set output "$OUT/scale.png"
unset xtics; set xtics norotate nomirror; set ytics nomirror
set title "usft-bench-scale: start-up and enabling every site vs sites, log-log\n$MACHINE; $BUILD"
set xlabel "sites (log)"; set ylabel "ms (log)"
set logscale xy; set yrange [*:*]; set offsets 0, 0, 0, 0; set key top left
plot "$D/scale.dat" using 1:2:3:4 with yerrorlines lw 2 title "start-up (median, min .. max of the processes)", \\
     "" using 1:5:6:7 with yerrorlines lw 2 title "enable all", \\
     "" using 1:8:9:10 with yerrorlines lw 2 title "disable all"
unset logscale; unset xlabel
GP
	fi
	if [ -s "$D/attach_single.dat" ]; then
		cat <<GP
set output "$OUT/attach.png"
unset xtics; set xtics norotate nomirror; set ytics nomirror
set title "usft-bench-attach (seed 001): attach + detach time vs functions, log-log\n$MACHINE; $BUILD"
set xlabel "functions (log)"; set ylabel "ms (log)"
set logscale xy; set offsets 0, 0, 0, 0; set key top left
plot "$D/attach_single.dat" using 1:2:3:4 with yerrorlines lw 2 title "single shared ops (median, min .. max)", \\
     "$D/attach_per.dat" using 1:2:3:4 with yerrorlines lw 2 title "one ops per function (median, min .. max)"
unset logscale; unset xlabel
GP
	fi
	if [ -s "$D/callsite_list.dat" ]; then
		cat <<GP
set output "$OUT/callsite.png"
unset xtics; set xtics norotate nomirror
set title "usft-bench-callsite: cost per call vs unrelated ops on another function\n$MACHINE; $BUILD"
set xlabel "unrelated ops"; set ylabel "ns per call"
unset logscale; set offsets 0, 0, 0, 0; set yrange [0:*]; set key top left
plot "$D/callsite_list.dat" using 1:2:3:4 with yerrorlines lw 2 title "list walk, the kernel's (median, min .. max)", \\
     "$D/callsite_cs.dat" using 1:2:3:4 with yerrorlines lw 2 title "per-callsite ops (median, min .. max)"
GP
	fi
} > "$D/plots.gp"
if gnuplot "$D/plots.gp" 2> "$D/gnuplot.log"; then
	log "plots: $(cd "$OUT" && ls ./*.png 2>/dev/null | tr '\n' ' ')"
else
	log "gnuplot failed (see $D/gnuplot.log); tables only"
fi
