#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make bench [QUICK=1]`: every benchmark in one go, each comparison
# interleaved inside its program (A B A B ..., medians), progress on
# stderr, results in bench-results/: results.csv (section,case,metric,value),
# results.md (one table per section with ratios to its baseline) and a PNG
# per benchmark when gnuplot is installed (scripts/bench-plots.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-build}
OUT=${OUT:-bench-results}
QUICK=${QUICK:-0}
mkdir -p "$OUT"
CSV=$OUT/results.csv
RAW=$OUT/raw.txt
: > "$RAW"
echo "section,case,metric,value" > "$CSV"

log() { echo "bench: $*" >&2; }

if [ "$QUICK" = 1 ]; then
	LADDER_ARGS="--quick --scale 0.25"; TRIGGER_ARGS="--quick --scale 0.25"
	ATTACH_ARGS="--rounds 1"; CALLSITE_ARGS="--scale 0.25 --rounds 3"
	PEER_N=1000000; PEER_R=3; PEER_ROUNDS=3
else
	LADDER_ARGS=""; TRIGGER_ARGS=""; ATTACH_ARGS="--rounds 3"; CALLSITE_ARGS=""
	PEER_N=4000000; PEER_R=5; PEER_ROUNDS=5
fi

# machine and build, so every figure names them
{
	echo "# usft bench $(date -u +%Y-%m-%dT%H:%M:%SZ) quick=$QUICK"
	echo "# machine: $(uname -m) $(nproc) cpus, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
	echo "# load average at start: $(cut -d" " -f1-3 /proc/loadavg)"
	echo "# build: $BUILD ($(grep -m1 CMAKE_BUILD_TYPE:STRING "$BUILD/CMakeCache.txt" 2>/dev/null | cut -d= -f2)), $(cc --version | head -1)"
} > "$OUT/machine.txt"

# key=value lines "section=S case=C metric=V ..." -> CSV rows
to_csv() {
	awk '$1 ~ /^section=/ {
		split($1, a, "="); split($2, b, "=");
		for (i = 3; i <= NF; i++) { split($i, kv, "="); if (kv[2] != "") print a[2] "," b[2] "," kv[1] "," kv[2] }
	}' >> "$CSV"
}

run() {
	local name=$1; shift
	log "$name ..."
	"$@" 2> >(sed "s/^/bench: $name: /" >&2) | tee -a "$RAW" | to_csv
}

B=$BUILD/bench
run ladder "$B/usft-bench-ladder" $LADDER_ARGS
run trigger "$B/usft-bench-trigger" $TRIGGER_ARGS
run attach "$B/usft-bench-attach" $ATTACH_ARGS
run callsite "$B/usft-bench-callsite" $CALLSITE_ARGS

# ---- the floor: tracers against the cheapest timestamped event, 1 and 2
# threads, usft and uftrace (bench/floor.sh runs usft-bench-floor under each)
log "floor ..."
if [ "$QUICK" = 1 ]; then FLOOR_ENV="ROUNDS=1 SCALE=0.25 INNER=3"; else FLOOR_ENV="ROUNDS=3 SCALE=1 INNER=5"; fi
env $FLOOR_ENV bench/floor.sh "$BUILD" "$OUT" > "$OUT/floor-table.txt"
sed -n 's/^summary //p' "$OUT/floor-summary.txt" | awk '{
	for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2]; k[i] = kv[1] }
	for (i = 3; i <= NF; i++) if (v[k[i]] != "-") print "floor," v["tool"] "_" v["threads"] "t," k[i] "," v[k[i]]
}' >> "$CSV"

# ---- scale in sites: start-up, memory per site, enable/disable all ----------
log "scale ..."
if [ "$QUICK" = 1 ]; then
	SIZES="1000 10000" PROCS=1 ROUNDS=3 bench/scale.sh "$BUILD" "$OUT" > "$OUT/scale-table.txt"
else
	SIZES="1000 3000 10000 30000 100000" PROCS=3 ROUNDS=5 bench/scale.sh "$BUILD" "$OUT" > "$OUT/scale-table.txt"
fi
grep '^section=scale' "$OUT/scale/scale.txt" | tee -a "$RAW" | to_csv

# ---- real programs (PROGRAMS=1: fetches and builds sources) -----------------
if [ "${PROGRAMS:-0}" = 1 ]; then
	log "programs ..."
	bench/programs.sh "$BUILD" "$OUT" > "$OUT/programs-table.txt"
	grep '^section=programs' "$OUT/programs.txt" | tee -a "$RAW" | to_csv
fi

# ---- peers: the same workload under each tool ---------------------------
PD=$OUT/peers
mkdir -p "$PD"
P=bench/peers
peer_ok=()
build_peer() {	# name, command...
	local name=$1; shift
	if "$@" > "$PD/$name.build.log" 2>&1; then peer_ok+=("$name"); else log "peers: $name not built (see $PD/$name.build.log)"; fi
}
if [ "$(id -u)" = 0 ]; then
	for pkg in uftrace libclang-rt-14-dev; do
		dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" ||
			{ log "installing $pkg for the peers table"; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >/dev/null 2>&1 || true; }
	done
fi
build_peer untraced cc -O2 -o "$PD/untraced" $P/work.c
build_peer pfe5 cc -O2 -fpatchable-function-entry=5 -o "$PD/pfe5" $P/work.c
build_peer finstrument sh -c "cc -O2 -finstrument-functions -c $P/work.c -o $PD/work_fi.o && cc -O2 -c $P/cyg_hooks.c -o $PD/cyg.o && cc -o $PD/finstrument $PD/work_fi.o $PD/cyg.o"
if command -v clang++ >/dev/null; then
	build_peer xray_noop clang++ -x c++ -O2 -fxray-instrument -fxray-instruction-threshold=1 -DPEER_SETUP \
		-o "$PD/xray_noop" $P/work.c -x c++ $P/xray_setup.cc
else
	log "peers: xray_noop skipped (clang++ not installed)"
fi
# usft with an empty callback on work(): xray_noop's job (entry only).  -g:
# work()'s DWARF shows it takes no floating-point argument, so its site calls
# the copy that leaves xmm0-7 alone (novec_tramp); usft_ops_tramp_xmm is the
# same binary with novec_tramp=0 (every argument register saved, as XRay's)
if [ -f "$BUILD/runtime/libusft.so" ]; then
	build_peer usft_ops_tramp sh -c "cc -O2 -g -fpatchable-function-entry=5 -DPEER_SETUP -c $P/work.c -o $PD/work_pfe.o && cc -O2 -I runtime/include -I $BUILD/runtime/include -c $P/usft_setup.c -o $PD/usft_setup.o && cc -o $PD/usft_ops_tramp $PD/work_pfe.o $PD/usft_setup.o -L$BUILD/runtime -lusft -Wl,-rpath,$(cd "$BUILD/runtime" && pwd)"
fi
USFT=$BUILD/inject/usft
# events of one peer run x ~48 bytes (function_graph: entry + exit), in KiB
USFT_RING_KB=$(( (PEER_N * PEER_R * 2 * 48) / 1024 + 4096 ))
have() { local x; for x in "${peer_ok[@]}"; do [ "$x" = "$1" ] && return 0; done; return 1; }

peer_cmd() {	# case -> command line
	case $1 in
	untraced) echo "$PD/untraced $PEER_N $PEER_R" ;;
	finstrument) echo "$PD/finstrument $PEER_N $PEER_R" ;;
	xray_noop) echo "$PD/xray_noop $PEER_N $PEER_R" ;;
	usft_ops_tramp) echo "$PD/usft_ops_tramp $PEER_N $PEER_R" ;;
	usft_ops_tramp_xmm) echo "env USFT_OPTIONS=novec_tramp=0 $PD/usft_ops_tramp $PEER_N $PEER_R" ;;
	uftrace_dynamic) echo "uftrace record -P . -d $PD/uftrace.data $PD/pfe5 $PEER_N $PEER_R" ;;
	# rings sized to hold the run and pre-faulted, so page faults of the
	# first pass are not timed (uftrace also keeps every event)
	usft_function) echo "$USFT record -q --prefault -b $USFT_RING_KB -p function -o $PD/usft.trace $PD/pfe5 $PEER_N $PEER_R" ;;
	usft_function_graph) echo "$USFT record -q --prefault -b $USFT_RING_KB -p function_graph -o $PD/usft.trace $PD/pfe5 $PEER_N $PEER_R" ;;
	esac
}
cases=()
have untraced && cases+=(untraced)
have xray_noop && cases+=(xray_noop)
have usft_ops_tramp && cases+=(usft_ops_tramp usft_ops_tramp_xmm)
have finstrument && cases+=(finstrument)
if have pfe5 && command -v uftrace >/dev/null; then cases+=(uftrace_dynamic); else log "peers: uftrace_dynamic skipped (uftrace not installed)"; fi
if have pfe5 && [ -x "$USFT" ]; then cases+=(usft_function usft_function_graph); else log "peers: usft rows skipped ($USFT not built)"; fi
declare -A samples
for ((r = 0; r < PEER_ROUNDS; r++)); do
	for c in "${cases[@]}"; do
		v=$($(peer_cmd "$c") 2>/dev/null | sed -n 's/.*ns_per_call=\([0-9.]*\).*/\1/p' | head -1)
		[ -n "$v" ] && samples[$c]="${samples[$c]:-} $v"
	done
	log "peers round $((r + 1))/$PEER_ROUNDS"
done
for c in "${cases[@]}"; do
	# median, and the smallest and largest round for the plot's error bars
	m=$(echo ${samples[$c]:-} | tr ' ' '\n' | sort -g |
		awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)], "ns_per_call_min=" a[1], "ns_per_call_max=" a[NR]}')
	[ -n "$m" ] && echo "section=peers case=$c ns_per_call=$m" | tee -a "$RAW" | to_csv
done

# usft's empty callback against XRay's no-op handler: the time each adds to
# the untraced run of the same round (the three run back to back), median
# of the rounds' ratios
for c in usft_ops_tramp usft_ops_tramp_xmm; do
	[ -n "${samples[$c]:-}" ] && [ -n "${samples[xray_noop]:-}" ] &&
		[ -n "${samples[untraced]:-}" ] || continue
	r=$(paste <(echo ${samples[untraced]} | tr ' ' '\n') <(echo ${samples[xray_noop]} | tr ' ' '\n') \
		<(echo ${samples[$c]} | tr ' ' '\n') |
		awk 'NF == 3 && $2 > $1 { print ($3 - $1) / ($2 - $1) }' | sort -g |
		awk '{ a[NR] = $1 } END { if (NR) printf "%.2f", a[int((NR + 1) / 2)] }')
	[ -n "$r" ] && echo "ratio $c/xray_noop=$r (ns each adds to the same round's untraced run, median of $PEER_ROUNDS rounds)" | tee -a "$RAW"
done

# ---- results.md: a table per section, ratios to its baseline -------------
{
	cat "$OUT/machine.txt"
	echo
	for sec in ladder trigger attach callsite peers; do
		awk -F, -v s=$sec '
		$1 == s {
			if (!(s in base)) base[s] = "";
			key = $2 SUBSEP $3; val[key] = $4; if (!(($2) in seen)) { seen[$2] = 1; order[++n] = $2 }
			if (!(($3) in mseen)) { mseen[$3] = 1; morder[++m] = $3 }
		}
		END {
			if (!n) exit;
			main = (s == "trigger") ? "mcalls_per_s" : (s == "attach") ? "ms" : "ns_per_call";
			b = (s == "ladder" || s == "peers") ? "untraced" : (s == "trigger") ? "base" : "";
			printf "## %s\n\n| case | %s | ratio to %s |\n|---|---|---|\n", s, main, (b == "" ? "-" : b);
			for (i = 1; i <= n; i++) {
				c = order[i]; v = val[c SUBSEP main];
				if (v == "") continue;
				r = (b != "" && val[b SUBSEP main] > 0) ? sprintf("%.2f", v / val[b SUBSEP main]) : "";
				printf "| %s | %s | %s |\n", c, v, r;
			}
			print "";
		}' "$CSV"
	done
	echo "## floor"
	echo
	grep -v '^summary' "$OUT/floor-table.txt"
	echo
	echo "## scale"
	echo
	cat "$OUT/scale-table.txt"
	echo
	if [ -s "$OUT/programs-table.txt" ] && [ "${PROGRAMS:-0}" = 1 ]; then
		echo "## programs"
		echo
		cat "$OUT/programs-table.txt"
		echo
	fi
	echo "## ratios"
	echo
	grep '^ratio' "$RAW" | sed 's/^/- /'
} > "$OUT/results.md"

# ---- plots: one PNG per benchmark (scripts/bench-plots.sh) ---------------
"$ROOT/scripts/bench-plots.sh" "$OUT"
log "wrote $CSV, $OUT/results.md"
