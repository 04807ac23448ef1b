#!/bin/bash
# SPDX-License-Identifier: MIT
# scripts/demo-attach.sh BUILD_DIR - the attach step of `make demo`
# (docs/attach.md): start tracee-server (worker threads, blocking calls, a
# thread that blocks every signal; it was not started by usft and is not
# linked with it), attach to it with `usft record -P` for one second, print
# the call tree, and show that the server runs on after the detach with its
# program text byte-identical to before the attach.
set -euo pipefail
build=${1:?usage: demo-attach.sh BUILD_DIR}
usft=$build/inject/usft
server=$build/samples/tracee/tracee-server
out=$build/demo-attach.dat

# the text (r-xp) mappings of the server's own binary, read through /proc/PID/mem
text_sum() {
	local pid=$1 range start end
	while read -r range perms _ _ _ path; do
		[ "$perms" = r-xp ] && [ "$path" = "$(readlink -f "$server")" ] || continue
		start=$((16#${range%-*})); end=$((16#${range#*-}))
		dd if=/proc/"$pid"/mem bs=4096 skip=$((start / 4096)) count=$(((end - start) / 4096)) \
			status=none
	done < /proc/"$pid"/maps | sha256sum | cut -c1-16
}

coproc SERVER { exec "$server" 3; }
pid=$SERVER_PID
trap 'kill "$pid" 2>/dev/null || :' EXIT
read -r ready _ <&"${SERVER[0]}"
[ "$ready" = ready ] || { echo "demo-attach: tracee-server did not start" >&2; exit 1; }
before=$(text_sum "$pid")
echo "== usft record -P $pid: attach to a running tracee-server (pid $pid), record 1 s, detach =="
"$usft" record -P "$pid" -p function_graph -l checksum -l mix --duration 1 -o "$out"
# (report is cut short by head: its SIGPIPE is expected)
{ "$usft" report -i "$out" || :; } | head -n 12
after=$(text_sum "$pid")
kill -0 "$pid"
echo "== after the detach: tracee-server (pid $pid) still runs; its text is" \
     "$([ "$before" = "$after" ] && echo "byte-identical to before the attach ($after)" ||
	echo "CHANGED ($before -> $after)") =="
[ "$before" = "$after" ]
kill -TERM "$pid"
wait "$pid" 2>/dev/null || :
trap - EXIT
rm -f "$out"
