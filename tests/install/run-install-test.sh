#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run-install-test.sh STEP - install/packaging checks, one ctest test per STEP
# (tests/install/CMakeLists.txt sets the USFT_* environment below).
#
#   install    cmake --install the build tree into $USFT_PREFIX, check the file list
#   cmake      configure, build and run consumer-cmake/ against the installed package
#   pkgconfig  build and run consumer-cmake/app.c with plain cc + pkg-config
#   headers    every installed public header compiles alone as C and as C++
#   abi        libusft.so/.a have no __patchable_function_entries section and
#              `nm -D --defined-only libusft.so` equals the global: list of libusft.map
#   all        every step above, in order
#
# Exit 0 pass, 1 fail, 77 skip.
set -euo pipefail

step=${1:?usage: run-install-test.sh install|cmake|pkgconfig|kernel|headers|abi|all}

: "${USFT_SOURCE_DIR:?}" "${USFT_BUILD_DIR:?}" "${USFT_WORK_DIR:?}" "${USFT_PREFIX:?}"
: "${USFT_LIBDIR:=lib}" "${USFT_INCLUDEDIR:=include}"
: "${USFT_CMAKEDIR:=$USFT_LIBDIR/cmake/usft}" "${USFT_PKGCONFIGDIR:=$USFT_LIBDIR/pkgconfig}"
: "${USFT_VERSION:?}" "${USFT_ARCH:?}" "${USFT_PATCH_CFLAGS:?}"
: "${USFT_LIB:?}" "${USFT_STATIC_LIB:?}" "${USFT_MAP:?}"
: "${USFT_SANITIZE_FLAGS:=}"
: "${USFT_CMAKE:=cmake}" "${USFT_GENERATOR:=}" "${USFT_MAKE_PROGRAM:=}"
: "${USFT_CC:=cc}" "${USFT_CXX:=g++}"
: "${USFT_READELF:=readelf}" "${USFT_NM:=nm}"
[ -n "$USFT_READELF" ] || USFT_READELF="readelf"
[ -n "$USFT_NM" ] || USFT_NM="nm"

consumer_src=$USFT_SOURCE_DIR/tests/install/consumer-cmake
prefix_incdir=$USFT_PREFIX/$USFT_INCLUDEDIR
failures=0

run() {
	printf '+'
	printf ' %q' "$@"
	printf '\n'
	"$@"
}

fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

die() {
	echo "FAIL: $*" >&2
	exit 1
}

need() {
	local t
	for t in "$@"; do
		command -v "$t" >/dev/null 2>&1 || die "'$t' not found (make deps installs it)"
	done
}

need_installed() {
	[ -f "$USFT_PREFIX/.usft-installed" ] ||
		die "$USFT_PREFIX is not populated: run the install.install test first"
}

# has_pfe FILE: FILE has a __patchable_function_entries section
has_pfe() {
	# no grep -q: with pipefail, an early exit would SIGPIPE readelf
	"$USFT_READELF" -SW "$1" | grep '__patchable_function_entries' >/dev/null
}

step_install() {
	local f h rel leaked

	need "$USFT_CMAKE"
	rm -rf "$USFT_PREFIX"
	run "$USFT_CMAKE" --install "$USFT_BUILD_DIR" --prefix "$USFT_PREFIX"

	for f in "$USFT_INCLUDEDIR/usft/ftrace.h" "$USFT_INCLUDEDIR/usft/version.h" \
		 "$USFT_LIBDIR/libusft.so" "$USFT_LIBDIR/libusft.a" \
		 "$USFT_PKGCONFIGDIR/usft.pc" \
		 "$USFT_CMAKEDIR/usftConfig.cmake" "$USFT_CMAKEDIR/usftConfigVersion.cmake" \
		 "$USFT_CMAKEDIR/usftTargets.cmake" "$USFT_CMAKEDIR/UsftInstrument.cmake"; do
		[ -e "$USFT_PREFIX/$f" ] || fail "not installed: $f"
	done
	# every public header of the source tree is installed
	for h in "$USFT_SOURCE_DIR"/runtime/include/usft/*.h \
		 "$USFT_SOURCE_DIR"/runtime/include/usft/asm/*.h; do
		[ -e "$h" ] || continue
		rel=${h#"$USFT_SOURCE_DIR"/runtime/include/}
		[ -f "$prefix_incdir/$rel" ] || fail "header not installed: $rel"
	done
	# the installed package must not point back into the source or build tree
	# (the prefix itself lives in the build tree: mask it first)
	for f in "$USFT_PREFIX/$USFT_CMAKEDIR"/*.cmake "$USFT_PREFIX/$USFT_PKGCONFIGDIR/usft.pc"; do
		[ -f "$f" ] || continue
		leaked=$(sed "s#$USFT_PREFIX##g" "$f" |
			grep -nF -e "$USFT_BUILD_DIR" -e "$USFT_SOURCE_DIR/" || true)
		[ -z "$leaked" ] || fail "$f refers to the build/source tree:"$'\n'"$leaked"
	done
	[ "$failures" -eq 0 ] || exit 1
	touch "$USFT_PREFIX/.usft-installed"
	echo "PASS: installed into $USFT_PREFIX"
}

step_cmake() {
	local bdir=$USFT_WORK_DIR/consumer-cmake cache_dir
	local -a args

	need_installed
	need "$USFT_CMAKE"
	rm -rf "$bdir"
	args=(-S "$consumer_src" -B "$bdir"
	      "-DCMAKE_PREFIX_PATH=$USFT_PREFIX"
	      -DCMAKE_BUILD_TYPE=RelWithDebInfo
	      "-DCMAKE_C_COMPILER=$USFT_CC")
	[ -z "$USFT_GENERATOR" ] || args+=(-G "$USFT_GENERATOR")
	[ -z "$USFT_MAKE_PROGRAM" ] || args+=("-DCMAKE_MAKE_PROGRAM=$USFT_MAKE_PROGRAM")
	if [ -n "$USFT_SANITIZE_FLAGS" ]; then
		args+=("-DCMAKE_C_FLAGS=$USFT_SANITIZE_FLAGS"
		       "-DCMAKE_EXE_LINKER_FLAGS=$USFT_SANITIZE_FLAGS")
	fi
	run "$USFT_CMAKE" "${args[@]}"
	cache_dir=$(sed -n 's/^usft_DIR:[A-Z]*=//p' "$bdir/CMakeCache.txt")
	[ "$(realpath "$cache_dir")" = "$(realpath "$USFT_PREFIX/$USFT_CMAKEDIR")" ] ||
		die "find_package(usft) found '$cache_dir', not $USFT_PREFIX/$USFT_CMAKEDIR"
	run "$USFT_CMAKE" --build "$bdir"

	has_pfe "$bdir/app" || die "usft_instrument(app) did not add the patch flags"
	# libusft.so is found through the build RPATH CMake derives from the
	# imported target: no LD_LIBRARY_PATH on purpose.
	run "$bdir/app" || die "consumer-cmake/app (usft::usft) failed"
	run "$bdir/app_static" || die "consumer-cmake/app_static (usft::usft_static) failed"
	echo "PASS: find_package(usft) consumer"
}

# pc_consumer_dir DIR: an empty DIR, and pkg-config looking in the prefix
pc_consumer_dir() {
	need_installed
	need pkg-config "$USFT_CC"
	rm -rf "$1"
	mkdir -p "$1"
	export PKG_CONFIG_PATH="$USFT_PREFIX/$USFT_PKGCONFIGDIR${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
}

step_pkgconfig() {
	local bdir=$USFT_WORK_DIR/consumer-pkgconfig v cflags patch libs libdir
	local -a san=()

	pc_consumer_dir "$bdir"

	run pkg-config --exists --print-errors usft
	v=$(pkg-config --variable=prefix usft)
	[ "$v" = "$USFT_PREFIX" ] || fail "usft.pc prefix is '$v', installed under $USFT_PREFIX"
	v=$(pkg-config --modversion usft)
	[ "$v" = "$USFT_VERSION" ] || fail "usft.pc version is '$v', project is $USFT_VERSION"
	patch=$(pkg-config --variable=patch_cflags usft)
	[ "$patch" = "$USFT_PATCH_CFLAGS" ] ||
		fail "patch_cflags is '$patch', expected '$USFT_PATCH_CFLAGS' on $USFT_ARCH"
	v=$(pkg-config --variable=patch_cflags_call_ops usft)
	[ -n "$v" ] || fail "usft.pc has no patch_cflags_call_ops"
	[ "$failures" -eq 0 ] || exit 1

	cflags=$(pkg-config --cflags usft)
	libs=$(pkg-config --libs usft)
	libdir=$(pkg-config --variable=libdir usft)
	[ -z "$USFT_SANITIZE_FLAGS" ] || san=("$USFT_SANITIZE_FLAGS")
	# shellcheck disable=SC2086 # pkg-config output is a word list
	run "$USFT_CC" -O2 -g "${san[@]}" $cflags $patch "$consumer_src/app.c" \
		-o "$bdir/app" $libs "-Wl,-rpath,$libdir"
	has_pfe "$bdir/app" || die "patch_cflags did not give app.c patchable sites"
	LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" run "$bdir/app" ||
		die "pkg-config consumer app failed"
	echo "PASS: pkg-config consumer"
}

# A module in the kernel's samples/ftrace style, built the way the
# docs/kernel-samples.md page says: cc $(pkg-config --cflags --libs usft-kernel)
step_kernel() {
	local bdir=$USFT_WORK_DIR/consumer-kernel cflags libs libdir out
	local -a san=()

	pc_consumer_dir "$bdir"
	run pkg-config --exists --print-errors usft-kernel
	cflags=$(pkg-config --cflags usft-kernel)
	libs=$(pkg-config --libs usft-kernel)
	libdir=$(pkg-config --variable=libdir usft)
	case " $cflags " in
	*" $USFT_PATCH_CFLAGS "*) ;;
	*) fail "pkg-config --cflags usft-kernel has no patch flags ($USFT_PATCH_CFLAGS): '$cflags'" ;;
	esac
	[ -z "$USFT_SANITIZE_FLAGS" ] || san=("$USFT_SANITIZE_FLAGS")
	# shellcheck disable=SC2086 # pkg-config output is a word list
	run "$USFT_CC" -O2 -g "${san[@]}" $cflags "$USFT_SOURCE_DIR/samples/module/wakeup-direct.c" \
		-o "$bdir/wakeup-direct" $libs "-Wl,-rpath,$libdir"
	has_pfe "$bdir/wakeup-direct" || die "the toy kernel's functions have no patchable sites"
	out=$(run "$bdir/wakeup-direct" usft_kernel.run_ms=50 2>&1) || die "wakeup-direct failed: $out"
	echo "$out" | grep -q 'wakeups seen' || die "wakeup-direct did not report its wakeups: $out"
	[ "$failures" -eq 0 ] || exit 1
	echo "PASS: a kernel-style module built with pkg-config usft-kernel"
}

step_headers() {
	local h rel n=0 other
	local -a common=(-fsyntax-only -Wall -Wextra -Werror "-I$prefix_incdir")

	need_installed
	need "$USFT_CC" "$USFT_CXX"
	for h in "$prefix_incdir"/usft/*.h "$prefix_incdir"/usft/asm/*.h; do
		[ -f "$h" ] || continue
		rel=${h#"$prefix_incdir"/}
		case $rel in
		usft/asm/*)
			# an arch header only compiles for its own architecture
			other=${rel#usft/asm/}
			if [ "${other%.h}" != "$USFT_ARCH" ]; then
				echo "skip $rel (not $USFT_ARCH)"
				continue
			fi
			;;
		esac
		# twice: the include guard must hold
		printf '#include <%s>\n#include <%s>\n' "$rel" "$rel" |
			"$USFT_CC" "${common[@]}" -x c - ||
			fail "$rel does not compile alone as C ($USFT_CC)"
		printf '#include <%s>\n#include <%s>\n' "$rel" "$rel" |
			"$USFT_CXX" "${common[@]}" -x c++ - ||
			fail "$rel does not compile alone as C++ ($USFT_CXX)"
		n=$((n + 1))
	done
	[ "$n" -gt 0 ] || die "no headers under $prefix_incdir/usft"
	[ "$failures" -eq 0 ] || exit 1
	echo "PASS: $n headers compile alone as C and C++"
}

# map_globals MAP: the names in every global: list of a version script
map_globals() {
	# drop /* */ and # comments, then walk the tokens
	sed 's/#.*//' "$1" | tr '\n' ' ' |
		sed -e 's#/\*\([^*]\|\*[^/]\)*\*/# #g' \
		    -e 's/[{};]/ & /g' -e 's/global[[:space:]]*:/ global: /g' \
		    -e 's/local[[:space:]]*:/ local: /g' |
		tr -s ' \t' '\n' |
		awk '$0 == "global:" { g = 1; next }
		     $0 == "local:" || $0 == "}" { g = 0; next }
		     g && $0 != "" && $0 != "{" && $0 != ";" { print }' |
		sort -u
}

step_abi() {
	local lib want got missing extra

	need "$USFT_READELF" "$USFT_NM"
	for lib in "$USFT_LIB" "$USFT_STATIC_LIB"; do
		[ -f "$lib" ] || die "$lib is not built"
		if has_pfe "$lib"; then
			fail "$(basename "$lib") has a __patchable_function_entries section:" \
			     "the runtime must never be built with the patch flags"
		fi
	done

	want=$(map_globals "$USFT_MAP")
	[ -n "$want" ] || die "no global: symbols parsed from $USFT_MAP"
	# absolute (A) entries are the version nodes; strip @VER / @@VER
	got=$("$USFT_NM" -D --defined-only "$USFT_LIB" |
		awk 'NF >= 3 && $2 != "A" { sub(/@.*/, "", $3); print $3 }' | sort -u)
	missing=$(comm -23 <(echo "$want") <(echo "$got"))
	extra=$(comm -13 <(echo "$want") <(echo "$got"))
	[ -z "$missing" ] || fail "in the global: list of libusft.map but not exported:"$'\n'"$missing"
	[ -z "$extra" ] || fail "exported but not in the global: list of libusft.map:"$'\n'"$extra"
	[ "$failures" -eq 0 ] || exit 1
	echo "PASS: no patch sites in the runtime; $(echo "$want" | wc -l) exported symbols match libusft.map"
}

case $step in
install)	step_install ;;
cmake)		step_cmake ;;
pkgconfig)	step_pkgconfig ;;
kernel)		step_kernel ;;
headers)	step_headers ;;
abi)		step_abi ;;
all)
	step_install
	step_cmake
	step_pkgconfig
	step_kernel
	step_headers
	step_abi
	;;
*)
	echo "usage: $0 install|cmake|pkgconfig|kernel|headers|abi|all" >&2
	exit 2
	;;
esac
