#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# scripts/setup-arm64.sh - prepare a Debian 12 x86-64 machine (as root) to
# cross-build usft for aarch64 and run its tests under qemu-user:
#   - gcc-aarch64-linux-gnu, qemu-user, qemu-user-binfmt
#   - arm64 multiarch packages (libelf, libdw, liburcu, libfuse3 dev; libc6, libstdc++6)
#   - criterion:arm64 unpacked into a private sysroot (it cannot be
#     co-installed with criterion:amd64: libnanomsg5 is not Multi-Arch: same)
#   - the qemu-aarch64 binfmt_misc handler (criterion's BoxFort re-executes
#     /proc/self/exe; without it: "Could not spawn test instance")
#
# Idempotent.  Exit status 0 in every case where the machine simply cannot
# run arm64 binaries; then it prints a loud message and writes the skip
# marker $USFT_ARM64_SKIP_MARKER (default build-arm64/.arm64-skip) whose
# first line is the reason.  Exit status non-zero only for a real failure
# (apt refused a package that should exist).  On success the marker is
# removed and $USFT_ARM64_READY_MARKER is written.
#
# Variables: USFT_ARM64_SYSROOT (default /opt/usft-arm64-sysroot),
#            USFT_ARM64_SKIP_MARKER, USFT_ARM64_READY_MARKER.
set -euo pipefail

SYSROOT=${USFT_ARM64_SYSROOT:-/opt/usft-arm64-sysroot}
SKIP=${USFT_ARM64_SKIP_MARKER:-build-arm64/.arm64-skip}
READY=${USFT_ARM64_READY_MARKER:-build-arm64/.arm64-ready}
export DEBIAN_FRONTEND=noninteractive

mkdir -p "$(dirname "$SKIP")" "$(dirname "$READY")"
rm -f "$READY"

skip() {
	echo "################################################################" >&2
	echo "## usft arm64: CANNOT RUN arm64 TESTS ON THIS MACHINE" >&2
	echo "## reason: $*" >&2
	echo "## the arm64 test stage will be SKIPPED (marker: $SKIP)" >&2
	echo "################################################################" >&2
	printf '%s\n' "$*" >"$SKIP"
	exit 0
}

log() { echo "setup-arm64: $*"; }

[ "$(uname -m)" = x86_64 ] || skip "host is $(uname -m), this recipe is for x86-64 hosts"
command -v dpkg >/dev/null && command -v apt-get >/dev/null || skip "not a Debian system (no dpkg/apt-get)"
[ "$(id -u)" = 0 ] || skip "not root: run 'sudo $0' once"

pkgs_host="gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user qemu-user-binfmt"
pkgs_arm64="libc6:arm64 libelf-dev:arm64 libdw-dev:arm64 liburcu-dev:arm64 libfuse3-dev:arm64 libstdc++6:arm64 libgit2-1.5:arm64 libffi8:arm64"

installed() {
	dpkg-query -W -f='${Status}\n' "$1" 2>/dev/null | grep -q ' installed$'
}

need=""
for p in $pkgs_host $pkgs_arm64; do
	installed "$p" || need="$need $p"
done
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
	log "+ dpkg --add-architecture arm64"
	dpkg --add-architecture arm64
	need="$need (arch)"
fi
if [ -n "$need" ]; then
	log "+ apt-get update"
	apt-get update -qq || skip "apt-get update failed (no package mirror?)"
	need=""
	for p in $pkgs_host $pkgs_arm64; do
		installed "$p" || need="$need $p"
	done
	log "+ apt-get install -y$need"
	# shellcheck disable=SC2086
	apt-get install -y -qq $need </dev/null >/dev/null
fi

# criterion for arm64 in a private sysroot (no dpkg registration)
lib="$SYSROOT/usr/lib/aarch64-linux-gnu"
if [ ! -f "$lib/libcriterion.so.3" ] || [ ! -f "$lib/pkgconfig/criterion.pc" ]; then
	log "criterion:arm64 -> $SYSROOT"
	d=$(mktemp -d)
	(cd "$d" && apt-get download -qq libcriterion3:arm64 libcriterion-dev:arm64 libnanomsg5:arm64) ||
		{ rm -rf "$d"; apt-get update -qq;
		  d=$(mktemp -d); (cd "$d" && apt-get download -qq libcriterion3:arm64 libcriterion-dev:arm64 libnanomsg5:arm64); }
	mkdir -p "$SYSROOT"
	for f in "$d"/*.deb; do dpkg-deb -x "$f" "$SYSROOT"; done
	rm -rf "$d"
fi
pc="$lib/pkgconfig/criterion.pc"
sed -i "s|^prefix=.*|prefix=$SYSROOT/usr|; s/^Requires.private:/# Requires.private:/" "$pc"

# binfmt_misc: BoxFort re-executes the test binary through the kernel
if ! mountpoint -q /proc/sys/fs/binfmt_misc; then
	mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc 2>/dev/null ||
		skip "cannot mount binfmt_misc (container without the privilege?)"
fi
if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
	if [ -x /lib/systemd/systemd-binfmt ] && [ -f /usr/lib/binfmt.d/qemu-aarch64.conf ]; then
		/lib/systemd/systemd-binfmt /usr/lib/binfmt.d/qemu-aarch64.conf 2>/dev/null || true
	fi
	if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] && [ -f /usr/lib/binfmt.d/qemu-aarch64.conf ]; then
		# the .conf line is the register format itself
		grep -v '^#' /usr/lib/binfmt.d/qemu-aarch64.conf >/proc/sys/fs/binfmt_misc/register 2>/dev/null || true
	fi
fi
grep -q '^enabled' /proc/sys/fs/binfmt_misc/qemu-aarch64 2>/dev/null ||
	skip "the qemu-aarch64 binfmt_misc handler could not be registered"

# smoke test: a static and a dynamic aarch64 binary must run
t=$(mktemp -d)
printf 'int main(void){return 42;}\n' >"$t/t.c"
aarch64-linux-gnu-gcc -O2 -o "$t/t" "$t/t.c"
set +e
timeout -s KILL 60 "$t/t"; rc=$?
set -e
rm -rf "$t"
[ "$rc" = 42 ] || skip "an aarch64 test binary did not run under qemu-user (rc=$rc)"

rm -f "$SKIP"
printf '%s\n' "$SYSROOT" >"$READY"
log "arm64 environment ready (criterion sysroot $SYSROOT)"
