#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/record_mem.sh [BUILD_DIR]: what recording costs in memory and loses,
# against uftrace, on the same binaries: samples/tracee/loop (5,000,000
# calls of one function) and, when bench/programs.sh has built them, lua
# and jq with its workloads (BUILD_DIR/bench-programs).  Per program and
# mode, one key=value line: events recorded and lost (usft's summary line,
# both in events), the max RSS of the recording (GNU time's %M: the largest
# of the recorder and the tracee) and of the program untraced, and the
# trace's bytes on disk per function_graph call (usft's file, uftrace's
# uftrace.data directory; calls = usft's function_graph events / 2, the
# same workload).  Then a markdown table.
#   RUNS=1 (the median of RUNS is printed), PROGRAMS="loop lua jq"
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${1:-build}
RUNS=${RUNS:-1}
PROGRAMS=${PROGRAMS:-loop lua jq}
USFT=$ROOT/$BUILD/inject/usft
W=$ROOT/$BUILD/bench-programs
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -x "$USFT" ] || { echo "record_mem.sh: $USFT not built (make build)" >&2; exit 1; }

cmd_of() {
	case $1 in
	loop) echo "$ROOT/$BUILD/samples/tracee/tracee-loop 5000000" ;;
	lua) echo "$W/lua/lua $W/lua/bench.lua" ;;
	jq) echo "$W/jq/jq [.[]|select(.n%3==0)|{k:.name,t:(.tags|length)}]|length $W/jq/in.json" ;;
	esac
}
have() {
	case $1 in
	loop) [ -x "$ROOT/$BUILD/samples/tracee/tracee-loop" ] ;;
	lua) [ -x "$W/lua/lua" ] && [ -s "$W/lua/bench.lua" ] ;;
	jq) [ -x "$W/jq/jq" ] && [ -s "$W/jq/in.json" ] ;;
	esac
}
rss() { sed -n 's/^rss_kb=//p' "$tmp/time"; }
median() { sort -g | awk '{ a[NR] = $1 } END { print NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

RAW=$tmp/raw
: > "$RAW"
for p in $PROGRAMS; do
	have "$p" || { echo "record_mem.sh: $p not built (bench/programs.sh builds lua and jq)" >&2; continue; }
	cmd=$(cmd_of "$p")
	for ((r = 1; r <= RUNS; r++)); do
		/usr/bin/time -f "rss_kb=%M" -o "$tmp/time" $cmd > /dev/null 2>&1
		echo "$p untraced rss $(rss)" >> "$RAW"
		for t in function function_graph; do
			/usr/bin/time -f "rss_kb=%M" -o "$tmp/time" "$USFT" record -p "$t" \
				-o "$tmp/u.dat" -- $cmd > /dev/null 2> "$tmp/err" || true
			read -r ev lost < <(sed -n 's/^usft: \([0-9]*\) events, \([0-9]*\) lost.*/\1 \2/p' "$tmp/err" | head -1)
			echo "$p usft_$t rss $(rss)" >> "$RAW"
			echo "$p usft_$t events ${ev:-0}" >> "$RAW"
			echo "$p usft_$t lost ${lost:-0}" >> "$RAW"
			echo "$p usft_$t bytes $(stat -c %s "$tmp/u.dat")" >> "$RAW"
		done
		if command -v uftrace > /dev/null; then
			rm -rf "$tmp/uftrace.data"
			/usr/bin/time -f "rss_kb=%M" -o "$tmp/time" uftrace record --no-pager -P . \
				-d "$tmp/uftrace.data" $cmd > /dev/null 2>&1 || true
			echo "$p uftrace rss $(rss)" >> "$RAW"
			echo "$p uftrace bytes $(du -sb "$tmp/uftrace.data" | cut -f1)" >> "$RAW"
		fi
	done
done
val() { grep "^$1 $2 $3 " "$RAW" | awk '{ print $4 }' | median; }
echo "# cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cpus, load average $(cut -d' ' -f1-3 /proc/loadavg); median of $RUNS runs; default settings (default rings, a full ring waits for the writer)"
for p in $PROGRAMS; do
	grep -q "^$p " "$RAW" || continue
	line="section=record_mem case=$p untraced_rss_kb=$(val "$p" untraced rss)"
	for m in usft_function usft_function_graph; do
		line="$line ${m}_events=$(val "$p" $m events) ${m}_lost=$(val "$p" $m lost) ${m}_rss_kb=$(val "$p" $m rss)"
	done
	calls=$(( $(val "$p" usft_function_graph events | cut -d. -f1) / 2 ))
	line="$line calls=$calls usft_graph_bytes_per_call=$(awk -v b="$(val "$p" usft_function_graph bytes)" -v c="$calls" 'BEGIN { printf "%.1f", c ? b / c : 0 }')"
	if grep -q "^$p uftrace " "$RAW"; then
		line="$line uftrace_rss_kb=$(val "$p" uftrace rss) uftrace_bytes_per_call=$(awk -v b="$(val "$p" uftrace bytes)" -v c="$calls" 'BEGIN { printf "%.1f", c ? b / c : 0 }')"
	fi
	echo "$line"
done | tee "$tmp/lines"
echo
echo "| program | untraced RSS | usft function: events (lost), RSS | usft function_graph: events (lost), RSS | uftrace -P .: RSS | bytes per call on disk, usft / uftrace |"
echo "|---|---|---|---|---|---|"
while read -r line; do
	declare -A v=()
	for kv in $line; do v[${kv%%=*}]=${kv#*=}; done
	mb() { awk -v k="${1:-0}" 'BEGIN { printf "%.0f MB", k / 1024 }'; }
	echo "| ${v[case]} | $(mb "${v[untraced_rss_kb]}") | ${v[usft_function_events]} (${v[usft_function_lost]}), $(mb "${v[usft_function_rss_kb]}") | ${v[usft_function_graph_events]} (${v[usft_function_graph_lost]}), $(mb "${v[usft_function_graph_rss_kb]}") | $(mb "${v[uftrace_rss_kb]:-0}") | ${v[usft_graph_bytes_per_call]} / ${v[uftrace_bytes_per_call]:--} |"
	unset v
done < "$tmp/lines"
