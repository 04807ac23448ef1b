#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/programs.sh - real programs under usft and uftrace: fetches the
# Debian sources of lua5.4, jq, zlib and ninja-build with `apt-get source`
# (a deb-src entry is added when root and none is configured), builds each
# with the patch flags into BUILD_DIR/bench-programs (nothing is vendored
# or committed), and times one workload per program untraced, under
# `usft record -p function_graph` and under `uftrace record -P .`, the
# modes interleaved, median of RUNS wall and CPU times, with the events usft
# lost.
#
#   bench/programs.sh [BUILD_DIR [OUT_DIR]]   (RUNS=3 PROGRAMS="lua jq zlib ninja")
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${1:-build}
OUT=${2:-bench-results}
RUNS=${RUNS:-3}
PROGRAMS=${PROGRAMS:-lua jq zlib ninja}
USFT=$ROOT/$BUILD/inject/usft
W=$ROOT/$BUILD/bench-programs
mkdir -p "$W/src" "$OUT"
OUT=$(cd "$OUT" && pwd)
case $(uname -m) in
aarch64) PFE=-fpatchable-function-entry=2 ;;
*) PFE=-fpatchable-function-entry=5 ;;
esac
CFLAGS_P="-O2 -g $PFE"
log() { echo "programs.sh: $*" >&2; }
[ -x "$USFT" ] || { log "$USFT not built (make build)"; exit 1; }

# ---- sources ---------------------------------------------------------------
declare -A PKG=([lua]=lua5.4 [jq]=jq [zlib]=zlib [ninja]=ninja-build)
srcdir() { find "$W/src" -maxdepth 1 -type d -name "$1-[0-9]*" | sort | tail -1; }
need_deb_src() {
	grep -rqsE '^(deb-src|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/ && return 0
	[ "$(id -u)" = 0 ] || { log "no deb-src entry in /etc/apt and not root: add one (see docs/benchmarks.md)"; return 1; }
	. /etc/os-release
	log "adding a deb-src entry for $VERSION_CODENAME (/etc/apt/sources.list.d/usft-deb-src.sources)"
	printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s %s-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
		"$VERSION_CODENAME" "$VERSION_CODENAME" > /etc/apt/sources.list.d/usft-deb-src.sources
	apt-get update -qq
}
fetch() {	# program -> its source directory
	local d
	d=$(srcdir "${PKG[$1]}")
	if [ -z "$d" ]; then
		need_deb_src
		(cd "$W/src" && apt-get source -qq "${PKG[$1]}" >&2)
		d=$(srcdir "${PKG[$1]}")
	fi
	[ -n "$d" ] || { log "apt-get source ${PKG[$1]} gave no source directory"; return 1; }
	echo "$d"
}

# ---- builds (each into $W/<program>, with the patch flags) -----------------
build_lua() {
	local s; s=$(fetch lua); mkdir -p "$W/lua"
	[ -x "$W/lua/lua" ] && return 0
	log "building lua from $s"
	# Debian's luaconf.h wants the header debian/rules writes
	printf '#define DEB_HOST_MULTIARCH "%s"\n' "$(cc -print-multiarch)" > "$W/lua/lua5.4-deb-multiarch.h"
	(cd "$W/lua" && for f in "$s"/src/*.c; do
		case $(basename "$f") in luac.c) continue ;; esac
		cc $CFLAGS_P -I. -DLUA_COMPAT_5_3 -DLUA_USE_LINUX -c "$f" -o "$(basename "$f" .c).o"
	done && cc -o lua ./*.o -lm -ldl)
}
build_jq() {
	local s; s=$(fetch jq); mkdir -p "$W/jq/src"
	[ -x "$W/jq/jq" ] && return 0
	log "building jq from $s (no oniguruma: the regex builtins are left out)"
	cp "$s"/src/*.[chly] "$s"/src/builtin.jq "$W/jq/src/"
	(cd "$W/jq" &&
		sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$/\\n"/' src/builtin.jq > src/builtin.inc &&
		echo '#define JQ_VERSION "bench"' > src/version.h &&
		for f in src/*.c; do
			case $(basename "$f") in inject_errors.c) continue ;; esac
			cc $CFLAGS_P -w -D_GNU_SOURCE -DHAVE_MEMMEM -DIEEE_8087 -Isrc -I. -c "$f" -o "$(basename "$f" .c).o"
		done && cc -o jq ./*.o -lm)
}
build_zlib() {
	local s; s=$(fetch zlib); mkdir -p "$W/zlib"
	[ -x "$W/zlib/minigzip" ] && return 0
	log "building zlib (minigzip) from $s"
	(cd "$W/zlib" && for f in adler32 compress crc32 deflate gzclose gzlib gzread gzwrite infback \
			inffast inflate inftrees trees uncompr zutil test/minigzip; do
		cc $CFLAGS_P -w -I"$s" -c "$s/$f.c" -o "$(basename "$f").o"
	done && cc -o minigzip ./*.o)
}
# g++ before 13 keeps __patchable_function_entries entries for COMDAT copies
# of inline functions that the linker then discards, and ld refuses the
# object ("relocation refers to a discarded section"): such a g++ cannot build
# ninja with the patch flag, clang++ can.
ninja_cxx() {
	local v
	if [ -n "${NINJA_CXX:-}" ]; then echo "$NINJA_CXX"; return 0; fi
	v=$(g++ -dumpversion 2>/dev/null | cut -d. -f1)
	if [ -n "$v" ] && [ "$v" -ge 13 ]; then echo g++; return 0; fi
	command -v clang++ >/dev/null && { echo clang++; return 0; }
	log "ninja needs g++ >= 13 or clang++ (g++ ${v:-missing} drops COMDAT patch entries): apt-get install clang"
	return 1
}
build_ninja() {
	local s; s=$(fetch ninja); mkdir -p "$W/ninja"
	[ -x "$W/ninja/ninja" ] && return 0
	log "building ninja from $s"
	rm -rf "$W/ninja/tree" && cp -r "$s" "$W/ninja/tree"
	local cxx; cxx=$(ninja_cxx) || return 1
	log "ninja: C++ compiler $cxx"
	(cd "$W/ninja/tree" && CXX=$cxx CFLAGS="$PFE" python3 ./configure.py --bootstrap >&2 &&
		cp ninja "$W/ninja/ninja")
}

# ---- workloads: inputs made once, commands print nothing -------------------
prep() {
	case $1 in
	lua)
		cat > "$W/lua/bench.lua" <<'EOF'
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
local t = {}
for i = 1, 20000 do t[i] = string.format("k%05d", (i * 7919) % 20000) end
table.sort(t)
local s = {}
for i = 1, 2000 do s[#s + 1] = tostring(i) .. ":" .. t[i] end
local r = fib(22) + #table.concat(s, ",")
assert(r > 0)
EOF
		;;
	jq)
		[ -s "$W/jq/in.json" ] || awk 'BEGIN { printf "["; for (i = 0; i < 20000; i++) printf "%s{\"n\":%d,\"name\":\"item%d\",\"tags\":[\"a\",\"b\",%d]}", i ? "," : "", i, i, i % 7; print "]" }' > "$W/jq/in.json"
		;;
	zlib)
		[ -s "$W/zlib/in.txt" ] || awk 'BEGIN { srand(1); for (i = 0; i < 200000; i++) printf "line %d %d %s\n", i, int(rand() * 100000), (i % 3 ? "alpha beta" : "gamma") }' > "$W/zlib/in.txt"
		;;
	ninja)
		mkdir -p "$W/ninja/proj"
		if [ ! -s "$W/ninja/proj/build.ninja" ]; then
			awk 'BEGIN { print "rule cp\n  command = cp $in $out\n"; for (i = 0; i < 3000; i++) { printf "build out/f%d: cp in/f%d\n", i, i } }' > "$W/ninja/proj/build.ninja"
			mkdir -p "$W/ninja/proj/in" && for i in $(seq 0 2999); do : > "$W/ninja/proj/in/f$i"; done
			"$W/ninja/ninja" -C "$W/ninja/proj" > /dev/null
		fi
		;;
	esac
}
workload() {	# program -> the command line (run from $W/<program>)
	case $1 in
	lua) echo "$W/lua/lua $W/lua/bench.lua" ;;
	jq) echo "$W/jq/jq [.[]|select(.n%3==0)|{k:.name,t:(.tags|length)}]|length $W/jq/in.json" ;;
	zlib) echo "$W/zlib/minigzip -c $W/zlib/in.txt" ;;
	ninja) echo "$W/ninja/ninja -C $W/ninja/proj" ;;
	esac
}
what() {
	case $1 in
	lua) echo "a script: sort 20000 strings, fib(22), concat" ;;
	jq) echo "a filter over 20000 objects" ;;
	zlib) echo "minigzip, a 6 MB text file" ;;
	ninja) echo "a no-op build of 3000 edges" ;;
	esac
}

run_mode() {	# program mode -> "wall_s cpu_s" (CPU: user + system of every process
	# and thread, the writer's included: on a loaded machine the steadier figure);
	# usft's events and lost events in $W/lost
	local p=$1 m=$2 cmd
	cmd=$(workload "$p")
	rm -rf "$W/$p/uftrace.data"
	local TIMEFORMAT='%R %U %S'
	{ time case $m in
	untraced) $cmd > /dev/null 2>&1 ;;
	usft) "$USFT" record -p function_graph -o "$W/$p/usft.dat" $cmd > /dev/null 2> "$W/$p/usft.err" ;;
	uftrace) uftrace record --no-pager -P . -d "$W/$p/uftrace.data" $cmd > /dev/null 2>&1 ;;
	esac; } 2> "$W/time"
	if [ "$m" = usft ]; then
		sed -n 's/^usft: \([0-9]*\) events, \([0-9]*\) lost.*/\1 \2/p' "$W/$p/usft.err" | head -1 > "$W/lost"
	fi
	awk '{ printf "%.4f %.4f\n", $1, $2 + $3 }' "$W/time"
}
median() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { print NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

modes=(untraced usft)
command -v uftrace >/dev/null && modes+=(uftrace) || log "uftrace not installed: no uftrace column"
RAW=$OUT/programs.txt
: > "$RAW"
for p in $PROGRAMS; do
	"build_$p" || { log "$p: build failed, skipped"; continue; }
	prep "$p"
	declare -A T=() C=()
	events=0 lost=0
	for ((r = 1; r <= RUNS; r++)); do
		for m in "${modes[@]}"; do
			read -r wall cpu < <(run_mode "$p" "$m")
			T[$m]="${T[$m]:-} $wall"
			C[$m]="${C[$m]:-} $cpu"
			if [ "$m" = usft ] && [ -s "$W/lost" ]; then read -r events lost < "$W/lost"; fi
		done
		log "$p: run $r/$RUNS"
	done
	base=$(echo "${T[untraced]}" | median)
	cbase=$(echo "${C[untraced]}" | median)
	line="section=programs case=$p untraced_s=$base untraced_cpu_s=$cbase"
	for m in "${modes[@]}"; do
		[ "$m" = untraced ] && continue
		v=$(echo "${T[$m]}" | median)
		c=$(echo "${C[$m]}" | median)
		line="$line ${m}_s=$v ${m}_x=$(awk -v a="$v" -v b="$base" 'BEGIN { printf "%.2f", a / b }')"
		line="$line ${m}_cpu_s=$c ${m}_cpu_x=$(awk -v a="$c" -v b="$cbase" 'BEGIN { printf "%.2f", (b > 0) ? a / b : 0 }')"
	done
	echo "$line usft_events=$events usft_lost=$lost" | tee -a "$RAW"
	unset T C
done

echo "# cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cpus, load average now $(cut -d' ' -f1-3 /proc/loadavg); median of $RUNS runs, modes interleaved"
echo
echo "| program and workload | untraced s (CPU s) | usft function_graph, wall (CPU) | uftrace -P ., wall (CPU) | usft events (lost) | usft slowdown / uftrace slowdown, wall (CPU) |"
echo "|---|---|---|---|---|---|"
while read -r line; do
	declare -A v=()
	for kv in $line; do v[${kv%%=*}]=${kv#*=}; done
	p=${v[case]}
	rel() { awk -v u="${1:-0}" -v f="${2:-0}" 'BEGIN { if (f > 1 && u > 0) printf "%.2f", (u - 1) / (f - 1); else print "-" }'; }
	echo "| $p, $(what "$p") | ${v[untraced_s]} (${v[untraced_cpu_s]}) | ${v[usft_x]:-}x (${v[usft_cpu_x]:-}x) | ${v[uftrace_x]:-}x (${v[uftrace_cpu_x]:-}x) | ${v[usft_events]} (${v[usft_lost]}) | $(rel "${v[usft_x]:-}" "${v[uftrace_x]:-}") ($(rel "${v[usft_cpu_x]:-}" "${v[uftrace_cpu_x]:-}")) |"
	unset v
done < "$RAW"
