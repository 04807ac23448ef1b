#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Hostile and unusual input to the usft command (docs/reliability.md):
trace files built byte by byte, binaries whose PT_INTERP is a script,
outputs that exist, are symlinks or cannot be written, numeric options out
of range.  One ctest test per case, like e2e.py (whose helpers it uses):
reliability.py CASE --usft PATH --tracees DIR --golden DIR --work DIR.
"""
import os
import re
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e  # noqa: E402
from e2e import Fail, check, run, usft, tracee  # noqa: E402,F401

# ---- trace files, byte by byte (runtime/tracers/trace_format.h) ------------------

SESSION, EVENTS, TASK, SYMS, PROFILE, END = 1, 2, 3, 4, 5, 6
EV_FUNC, EV_GRAPH_ENT, EV_GRAPH_RET = 1, 2, 3


def chunk(typ, pid, tid, payload=b"", arg=0, size=None):
    payload += b"\0" * (-len(payload) % 8)
    n = len(payload) if size is None else size
    return b"USFT" + struct.pack("<HHIIQQ", 1, typ, pid, tid, n, arg) + payload


def session(pid, tracer, comm):
    return chunk(SESSION, pid, 0, ("version=test\ntracer=%s\npid=%d\ncomm=%s\nbase_ns=0\n"
                                   "nr_cpus=1\n" % (tracer, pid, comm)).encode())


def syms(pid, table):
    out = b""
    for addr, name in table:
        nm = name.encode()
        out += struct.pack("<QQII", addr, 0, len(nm), 0) + nm + b"\0" * (8 - len(nm) % 8)
    return chunk(SYMS, pid, 0, out)


def w0(ts):
    return ts | (0xfff << 52)


def w1(ip, depth, typ):
    return ip | (depth << 48) | (typ << 60)


def events(pid, tid, words):
    return chunk(EVENTS, pid, tid, struct.pack("<%dQ" % len(words), *words))


def write(name, data):
    path = os.path.join(e2e.ARGS.work, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def crashed(rc):
    return rc < 0 or rc >= 128


# ---- cases -------------------------------------------------------------------------

def case_report_hostile():
    """Trace files that are empty, cut, or claim sizes they do not have."""
    # the outside tester's 32 bytes: a SESSION chunk of size 0 first
    p = write("zero.dat", chunk(SESSION, 1, 1))
    for fmt in ("text", "json"):
        rc, out, err = usft("report", "-i", p, "--format", fmt)
        check(rc == 0, "32-byte file, %s: rc %d %s" % (fmt, rc, err))
    # an empty file is no trace: a clear failure, not an empty report
    p = write("empty.dat", b"")
    rc, out, err = usft("report", "-i", p)
    check(rc == 1 and "is empty" in err and "nothing was recorded" in err,
          "empty file: rc %d %r" % (rc, err))
    # less than a header
    p = write("short.dat", b"USFT\1\0")
    rc, out, err = usft("report", "-i", p)
    check(rc == 1 and "not a usft trace file" in err, "16 bytes: rc %d %r" % (rc, err))
    # a chunk claiming 512 GiB: a cut chunk, not an allocation
    s = session(7, "function", "x")
    p = write("huge.dat", s + chunk(EVENTS, 7, 7, size=1 << 39))
    rc, out, err = usft("report", "-i", p)
    check(rc == 0 and "ends inside a chunk" in err, "huge size: rc %d %r" % (rc, err))
    # TASK and END chunks without payload, events of a pid that has no session
    p = write("odd.dat", s + chunk(TASK, 7, 7) + chunk(END, 7, 0) +
              events(8, 8, [w0(1), w1(0x1000, 0, EV_FUNC), 0]))
    for fmt in ("text", "json"):
        rc, out, err = usft("report", "-i", p, "--format", fmt)
        check(rc == 0, "odd chunks, %s: rc %d %r" % (fmt, rc, err))


NPROC = 70000


def many_processes(tracer):
    """NPROC processes, their SESSION chunks first, then every process's
    names and events: process i ran f<i> in thread t<i>."""
    base, ip0 = 100000, 0x400000
    parts = [session(base + i, tracer, "p%d" % i) for i in range(NPROC)]
    for i in range(NPROC):
        pid = base + i
        parts.append(syms(pid, [(ip0 + 16 * i, "f%d" % i), (ip0 - 16, "main")]))
        parts.append(chunk(TASK, pid, pid, ("t%d" % i).encode()))
        if tracer == "function":
            parts.append(events(pid, pid, [w0(i), w1(ip0 + 16 * i, 0, EV_FUNC), ip0 - 16]))
        else:
            parts.append(events(pid, pid, [w0(i), w1(ip0 + 16 * i, 0, EV_GRAPH_ENT),
                                           w0(i + 1), w1(ip0 + 16 * i, 1, EV_GRAPH_ENT),
                                           w0(i + 2), w1(ip0 + 16 * i, 1, EV_GRAPH_RET),
                                           w0(i + 3), w1(ip0 + 16 * i, 0, EV_GRAPH_RET)]))
    return write("many-%s.dat" % tracer, b"".join(parts))


def case_many_processes():
    """70,000 processes in one file: read in linear time and memory (the
    test's timeout is the bound), and every event stays with its process
    (more processes than a 16-bit index)."""
    p = many_processes("function")
    rc, out, err = usft("report", "-i", p)
    check(rc == 0, "report: rc %d %s" % (rc, err[-500:]))
    got = re.findall(r"^\s*(\S+)-(\d+)\s+\[\d+\]\s+\S+ (\S+) <-main$", out, re.M)
    check(len(got) == NPROC, "%d event lines, want %d" % (len(got), NPROC))
    for comm, tid, fn in got:
        i = int(tid) - 100000
        check(comm == "t%d" % i and fn == "f%d" % i,
              "thread %s: comm %s ran %s (events moved to another process)" % (tid, comm, fn))
    rc, out, err = usft("report", "-i", p, "--format", "json")
    check(rc == 0 and out.count('"ph":"i"') == NPROC, "json: rc %d %s" % (rc, err[-500:]))
    # function_graph keeps per-thread state: memory must follow the depth used
    p = many_processes("function_graph")
    rc, out, err = usft("report", "-i", p)
    check(rc == 0, "graph report: rc %d %s" % (rc, err[-500:]))
    leaves = re.findall(r"^\s*0\)\s+t(\d+)-(\d+)\s+\|.*\|\s+f(\d+)\(\);$", out, re.M)
    check(len(leaves) == NPROC, "%d leaf lines, want %d" % (len(leaves), NPROC))
    check(all(a == c and int(b) - 100000 == int(a) for a, b, c in leaves),
          "graph lines with the wrong process")
    rc, out, err = usft("report", "-i", p, "--format", "json")
    check(rc == 0 and out.count('"ph":"B"') == 2 * NPROC, "graph json: rc %d" % rc)


def preload_env(extra):
    shim = os.path.join(os.path.dirname(e2e.ARGS.usft), "libusft-preload.so")
    env = {"LD_PRELOAD": shim + " " + e2e.ARGS.libusft, "USFT_TRACER": "function",
           "USFT_OUTPUT": os.path.join(e2e.ARGS.work, "env.dat")}
    env.update(extra)
    return env


def case_numeric_options():
    """Every number of `usft record` and of the shim's variables is range-
    checked: the outside tester's -b values crashed (2^56-byte rings) or hung
    (round_pow2) the traced program; letters after a number were accepted."""
    bad = [("-b", "70368744177664"), ("-b", "18014398509481983"), ("-b", "12xyz"),
           ("-b", "0"), ("-b", "-1"), ("-b", "3"), ("-b", "16777217"), ("-b", ""),
           ("--max-graph-depth", "abc"), ("--max-graph-depth", "-1"),
           ("--max-graph-depth", "1025"), ("--max-graph-depth", "2x"),
           ("-O", "no_such_option=1"), ("-O", "sync=bogus"), ("-O", "jmp=2")]
    for opt, val in bad:
        try:
            rc, out, err = run([e2e.ARGS.usft, "record", "-o", "bad.dat", opt, val, "--",
                                tracee("nest")], timeout=30)
        except subprocess.TimeoutExpired:
            raise Fail("%s %s: usft record hangs" % (opt, val))
        check(rc == 2, "%s %r: rc %d, want 2 (usage)\n%s" % (opt, val, rc, err))
        check(val in err and ("use " in err or "refused" in err),
              "%s %r: the message names neither value nor range: %r" % (opt, val, err))
        check(not os.path.exists(os.path.join(e2e.ARGS.work, "bad.dat")),
              "%s %r: a trace file was made" % (opt, val))
    # the ends of the ranges are accepted
    rc, _, err = usft("record", "-o", "ok.dat", "-b", "4", "-p", "function_graph",
                      "--max-graph-depth", "1024", "-O", "jmp=1", tracee("nest"))
    check(rc == 0 and "24 events" in err, "-b 4 --max-graph-depth 1024: rc %d %s" % (rc, err))
    # the shim's own variables: the program runs as without the shim, and is told why
    rc0, out0, _ = run([tracee("nest")])
    for var, val in [("USFT_BUFFER_SIZE", "70368744177664K"),
                     ("USFT_BUFFER_SIZE", "18014398509481983K"), ("USFT_BUFFER_SIZE", "12xyz"),
                     ("USFT_BUFFER_SIZE", "17G"), ("USFT_MAX_DEPTH", "abc"),
                     ("USFT_MAX_DEPTH", "99999"), ("USFT_MAX_THREADS", "2"),
                     ("USFT_MAX_THREADS", "1x")]:
        try:
            rc, out, err = run([tracee("nest")], env=preload_env({var: val}), timeout=30)
        except subprocess.TimeoutExpired:
            raise Fail("%s=%s: the traced program hangs" % (var, val))
        check(rc == rc0 and out == out0, "%s=%s: rc %d (untraced %d)" % (var, val, rc, rc0))
        check("%s=%s" % (var, val) in err and "tracing is off" in err,
              "%s=%s: no message: %r" % (var, val, err))
    rc, out, err = run([tracee("nest")], env=preload_env({"USFT_BUFFER_SIZE": "4K",
                                                          "USFT_MAX_THREADS": "4"}))
    check(rc == rc0 and not err, "USFT_BUFFER_SIZE=4K: rc %d %r" % (rc, err))


CASES = {k[5:]: v for k, v in globals().items() if k.startswith("case_")}


def main():
    e2e.CASES = CASES
    return e2e.main()


if __name__ == "__main__":
    sys.exit(main())
