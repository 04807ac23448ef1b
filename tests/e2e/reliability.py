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
import shutil
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
    # from a pipe the file's size is unknown: the buffer grows with what arrives
    with open(p, "rb") as f:
        pr = subprocess.run([e2e.ARGS.usft, "report", "-i", "/dev/stdin"], stdin=f,
                            capture_output=True, timeout=60)
    check(pr.returncode == 0 and b"ends inside a chunk" in pr.stderr,
          "huge size from a pipe: rc %d %r" % (pr.returncode, pr.stderr))
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


def work(name):
    return os.path.join(e2e.ARGS.work, name)


def read(name):
    with open(work(name), "rb") as f:
        return f.read()


def no_temp_left():
    left = [f for f in os.listdir(e2e.ARGS.work) if ".usft-" in f]
    check(not left, "temporary trace files left behind: %s" % left)


def case_record_output():
    """`usft record -o FILE` replaces FILE only once the program ran and wrote
    a trace; a symbolic link is not followed unless --follow-symlink."""
    rc, _, err = usft("record", "-q", "-o", "keep.dat", tracee("nest"))
    check(rc == 0, "first recording: %d %s" % (rc, err))
    os.chmod(work("keep.dat"), 0o640)
    before = read("keep.dat")
    noexec = work("noexec")
    with open(noexec, "w") as f:
        f.write("#!/bin/sh\n")
    os.chmod(noexec, 0o644)
    for prog, want in (("/nonexistent", 127), (noexec, 126), ("no-such-program-here", 127)):
        rc, _, err = usft("record", "-o", "keep.dat", prog)
        check(rc == want, "%s: rc %d, want %d (%s)" % (prog, rc, want, err))
        check(read("keep.dat") == before, "%s: the existing trace was changed" % prog)
        no_temp_left()
    # a program that records nothing leaves it (and does not make a new one)
    rc, _, err = usft("record", "-o", "keep.dat", "--", "sh", "-c", "exit 3")
    check(rc == 3 and read("keep.dat") == before and "keep.dat left as it was" in err,
          "nothing recorded: rc %d %r" % (rc, err))
    rc, _, err = usft("record", "-o", "new.dat", "--", "sh", "-c", "exit 0")
    check(rc == 0 and not os.path.exists(work("new.dat")) and "not created" in err,
          "nothing recorded, new file: rc %d %r" % (rc, err))
    no_temp_left()
    # replaced when complete, with the old file's mode
    rc, _, err = usft("record", "-o", "keep.dat", "-p", "function_graph", tracee("nest"))
    check(rc == 0 and "24 events" in err and read("keep.dat") != before, "rerecord: %s" % err)
    check(os.stat(work("keep.dat")).st_mode & 0o777 == 0o640, "mode not kept")
    no_temp_left()
    # a symbolic link: refused, the file it points to untouched
    with open(work("victim.txt"), "w") as f:
        f.write("precious\n")
    os.symlink("victim.txt", work("link.dat"))
    rc, _, err = usft("record", "-o", "link.dat", tracee("nest"))
    check(rc == 125 and "symbolic link" in err and "--follow-symlink" in err,
          "symlink: rc %d %r" % (rc, err))
    check(read("victim.txt") == b"precious\n", "the link's target was written")
    no_temp_left()
    rc, _, err = usft("record", "--follow-symlink", "-o", "link.dat", tracee("nest"))
    check(rc == 0 and os.path.islink(work("link.dat")), "--follow-symlink: %d %s" % (rc, err))
    rc, out, err = usft("report", "-i", "victim.txt")
    check(rc == 0 and "outer <-main" in out, "--follow-symlink wrote no trace: %s" % err)
    os.symlink("made.dat", work("dangling.dat"))
    rc, _, err = usft("record", "--follow-symlink", "-o", "dangling.dat", tracee("nest"))
    check(rc == 0 and os.path.getsize(work("made.dat")) > 0, "dangling link: %s" % err)
    os.mkdir(work("adir"))
    rc, _, err = usft("record", "-o", "adir", tracee("nest"))
    check(rc == 125 and "directory" in err, "-o DIR: rc %d %r" % (rc, err))
    no_temp_left()


def case_report_output():
    """`usft report -o OUT` replaces OUT only when complete, never with the
    trace it reads, and does not follow a symbolic link unless asked."""
    rc, _, err = usft("record", "-q", "-o", "t.dat", tracee("nest"))
    check(rc == 0, "record: %s" % err)
    with open(work("out.txt"), "w") as f:
        f.write("old report\n")
    write("empty.dat", b"")
    rc, _, err = usft("report", "-i", "empty.dat", "-o", "out.txt")
    check(rc == 1 and read("out.txt") == b"old report\n", "failed report: %d %s" % (rc, err))
    rc, _, err = usft("report", "-i", "t.dat", "-o", "t.dat")
    check(rc == 1 and "trace being read" in err and read("t.dat").startswith(b"USFT"),
          "-o INPUT: rc %d %r" % (rc, err))
    os.symlink("out.txt", work("out.lnk"))
    rc, _, err = usft("report", "-i", "t.dat", "-o", "out.lnk")
    check(rc == 1 and "--follow-symlink" in err and read("out.txt") == b"old report\n",
          "-o LINK: rc %d %r" % (rc, err))
    rc, _, err = usft("report", "-i", "t.dat", "-o", "out.lnk", "--follow-symlink")
    check(rc == 0 and b"outer <-main" in read("out.txt") and os.path.islink(work("out.lnk")),
          "--follow-symlink: rc %d %r" % (rc, err))
    rc, _, err = usft("report", "-i", "t.dat", "-o", "/dev/full")
    check(rc == 1 and "No space left on device" in err, "-o /dev/full: rc %d %r" % (rc, err))
    rc, _, err = usft("report", "-i", "t.dat", "-o", "/dev/null")
    check(rc == 0, "-o /dev/null: rc %d %r" % (rc, err))
    no_temp_left()


def case_output_errors():
    """A trace that cannot be written says why: /dev/full and a full disk are
    ENOSPC (not "no patchable functions", not "a process died")."""
    rc0, out0, _ = run([tracee("nest")])
    rc, out, err = usft("record", "-o", "/dev/full", tracee("nest"))
    check(rc == rc0 and out == out0, "/dev/full: rc %d" % rc)
    check("ENOSPC" in err and "no patchable" not in err, "/dev/full: %r" % err)
    # no summary for a device, and none that reads as if the trace were whole
    check("no summary" in err and "as it was written" not in err
          and err.index("ENOSPC") < err.index("no summary"), "/dev/full summary: %r" % err)
    # a real full file system: a 64 KiB tmpfs (root), else a file size limit
    mnt = work("small")
    os.mkdir(mnt)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt],
                             capture_output=True).returncode == 0
    try:
        if mounted:
            rc, out, err = usft("record", "-o", os.path.join(mnt, "t.dat"), tracee("loop"),
                                "200000")
            want = ("the disk is full (ENOSPC)", "is full (ENOSPC)")
        else:
            import resource
            import signal

            def limit():
                signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
                resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))
            p = subprocess.run([e2e.ARGS.usft, "record", "-o", os.path.join(mnt, "t.dat"),
                                tracee("loop"), "200000"], capture_output=True,
                               preexec_fn=limit, cwd=e2e.ARGS.work)
            rc, err = p.returncode, p.stderr.decode()
            want = ("file size limit reached (EFBIG)", "did not finish the trace")
        check(rc == 0, "full disk: rc %d %s" % (rc, err))
        for w in want:
            check(w in err, "full disk: %r not said:\n%s" % (w, err))
        check("died" not in err, "full disk reported as a death:\n" + err)
        rc, out, err = usft("report", "-i", os.path.join(mnt, "t.dat"))
        check(rc == 0 and ("ENOSPC" in err or not err), "report of the full trace: %s" % err)
    finally:
        if mounted:
            subprocess.run(["umount", mnt])


def case_stripped():
    """A stripped program: `usft record` and `usft list` say it is stripped
    and what to do (it used to record 0 events without a word)."""
    prog = work("nest-stripped")
    shutil.copy(tracee("nest"), prog)
    subprocess.run(["strip", prog], check=True)
    rc, out, err = usft("record", "-o", "s.dat", prog)
    check(rc == 0 and "is stripped" in err and "--strip-debug" in err, "record: %r" % err)
    rc, out, err = usft("list", "-f", prog)
    check(rc == 0 and "is stripped" in err and "patch flags" not in err, "list: %r" % err)


def patch_cflags():
    import platform
    return ["-fpatchable-function-entry=2"] if platform.machine() == "aarch64" else \
        ["-fpatchable-function-entry=5"]


def cc(*args):
    p = subprocess.run(["cc", "-O1"] + list(args), capture_output=True, cwd=e2e.ARGS.work)
    check(p.returncode == 0, "cc %s: %s" % (" ".join(args), p.stderr.decode()))


def set_interp(path, interp):
    """Rewrite the PT_INTERP string of the ELF64 file @path in place."""
    with open(path, "r+b") as f:
        hdr = f.read(64)
        phoff, = struct.unpack_from("<Q", hdr, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", hdr, 0x36)
        for i in range(phnum):
            f.seek(phoff + i * phentsize)
            ph = f.read(phentsize)
            ptype, = struct.unpack_from("<I", ph, 0)
            if ptype == 3:
                off, = struct.unpack_from("<Q", ph, 8)
                size, = struct.unpack_from("<Q", ph, 32)
                check(len(interp) < size, "interpreter path too long")
                f.seek(off)
                f.write(interp.encode() + b"\0" * (size - len(interp)))
                return
    raise Fail("no PT_INTERP in " + path)


def case_list_reads_only():
    """`usft list -f PROG` reads files and never runs one: PROG's PT_INTERP
    names a script that would leave a marker file.  The libraries are still
    found (DT_RPATH/DT_RUNPATH with $ORIGIN, LD_LIBRARY_PATH)."""
    os.makedirs(work("lib"), exist_ok=True)
    os.makedirs(work("llp"), exist_ok=True)
    with open(work("foo.c"), "w") as f:
        f.write("int foo_fn(int x) { return x * 3; }\n")
    with open(work("bar.c"), "w") as f:
        f.write("int bar_fn(int x) { return x + 1; }\n")
    with open(work("main.c"), "w") as f:
        f.write("int foo_fn(int); int bar_fn(int);\n"
                "int main(int c, char **v) { (void)v; return foo_fn(c) + bar_fn(c) == 0; }\n")
    cc(*patch_cflags(), "-fPIC", "-shared", "-o", "lib/libfoo.so", "foo.c")
    cc(*patch_cflags(), "-fPIC", "-shared", "-o", "llp/libbar.so", "bar.c")
    # RUNPATH (the default) and the old DT_RPATH
    cc(*patch_cflags(), "-o", "prog", "main.c", "-Llib", "-Lllp", "-lfoo", "-lbar",
       "-Wl,-rpath,$ORIGIN/lib", "-Wl,--enable-new-dtags")
    cc(*patch_cflags(), "-o", "prog-rpath", "main.c", "-Llib", "-Lllp", "-lfoo", "-lbar",
       "-Wl,-rpath,$ORIGIN/lib", "-Wl,--disable-new-dtags")
    marker = work("MARKER")
    script = "/tmp/usft-rel-%d.sh" % os.getpid()
    with open(script, "w") as f:
        f.write("#!/bin/sh\ntouch %s\n" % marker)
    os.chmod(script, 0o755)
    try:
        env = {"LD_LIBRARY_PATH": work("llp")}
        for prog in ("prog", "prog-rpath"):
            rc, out, err = usft("list", "-f", work(prog), env=env)
            check(rc == 0, "list %s: %s" % (prog, err))
            names = set(out.splitlines())
            for want in ("main", "foo_fn [libfoo.so]", "bar_fn [libbar.so]"):
                check(want in names, "%s: %r not listed:\n%s" % (prog, want, out))
            shutil.copy(work(prog), work("hostile"))
            set_interp(work("hostile"), script)
            rc, out2, err = usft("list", "-f", work("hostile"), env=env)
            check(not os.path.exists(marker),
                  "usft list ran the program's PT_INTERP (%s)" % script)
            check(rc == 0 and set(out2.splitlines()) == names,
                  "hostile %s: rc %d, listed\n%s\nwant\n%s" % (prog, rc, out2, out))
        # without LD_LIBRARY_PATH libbar is not found: the rest is still listed
        rc, out, err = usft("list", "-f", work("prog"))
        check(rc == 0 and "foo_fn [libfoo.so]" in out and "bar_fn" not in out,
              "no LD_LIBRARY_PATH: %s" % out)
    finally:
        os.unlink(script)


CASES = {k[5:]: v for k, v in globals().items() if k.startswith("case_")}


def main():
    e2e.CASES = CASES
    return e2e.main()


if __name__ == "__main__":
    sys.exit(main())
