#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Crash-safe recording (docs/tracers.md, "Recording"): tracees killed at
random points, by a signal from outside (SIGKILL, SIGSEGV, SIGABRT, SIGBUS)
or by their own fault (a NULL store, abort(), a SIGBUS page, _exit), a
hundred times.  samples/tracee/crash.c stores the number of each call in a
MAP_SHARED progress file before making it, so the test knows which calls
the tracee had made: every one of them must be in the trace, the last
function entered before a fault (crash_here) in the tree, and the summary
must say how the process ended.  One ctest test per case, like e2e.py.
"""
import hashlib
import os
import random
import re
import signal
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e  # noqa: E402
from e2e import Fail, check, tracee  # noqa: E402,F401
from harness import env  # noqa: E402

RUNS = int(os.environ.get("USFT_CRASH_RUNS", "100"))


def progress(path):
    try:
        with open(path, "rb") as f:
            return struct.unpack("<qq", f.read(16))
    except (OSError, struct.error):
        return None


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def count(text, tracer, func):
    if tracer == "function":
        return len(re.findall(r": %s <-" % func, text))
    return len(re.findall(r"\|\s+%s\(\)( \{|;)" % func, text))


def read_trace(path):
    """{name: [calls per tid]}, the last function entered per tid and the
    exit text, read from the file itself (trace_format.h): an oracle that
    does not share the reader's code."""
    with open(path, "rb") as f:
        data = f.read()
    names, words, last, pos, exitinfo = {}, {}, {}, 0, ""
    total = 0
    while pos + 32 <= len(data):
        magic, ver, typ, pid, tid, size, arg = struct.unpack_from("<4sHHIIQQ", data, pos)
        check(magic == b"USFT" and pos + 32 + size <= len(data),
              "%s: a damaged chunk at %d" % (path, pos))
        body = data[pos + 32:pos + 32 + size]
        if typ == 4:                    # SYMS
            off = 0
            while off + 24 <= len(body):
                addr, _, nlen, _ = struct.unpack_from("<QQII", body, off)
                names[addr] = body[off + 24:off + 24 + nlen].decode()
                off += 24 + ((nlen + 8) & ~7)
        elif typ == 2:                  # EVENTS
            words.setdefault(tid, []).append(body)
        elif typ == 8:                  # EXIT
            exitinfo = body.rstrip(b"\0").decode()
        pos += 32 + size
    calls = {}
    for tid, bodies in words.items():
        w = struct.unpack("<%dQ" % (sum(len(b) for b in bodies) // 8), b"".join(bodies))
        k = 0
        while k + 2 <= len(w):
            typ = w[k + 1] >> 60
            n = {1: 3, 2: 2, 3: 2, 4: 2, 5: 3, 6: 3}.get(typ, 0)
            if not n:
                break
            total += 2 if typ in (5, 6) else 1
            if typ in (1, 2, 5, 6):     # a call: FUNC, graph entry, leaf
                name = names.get(w[k + 1] & ((1 << 48) - 1), "?")
                calls.setdefault(name, {}).setdefault(tid, 0)
                calls[name][tid] += 1
                last[tid] = name
            k += n
    return calls, last, exitinfo, total


def one(i, rnd, work):
    mode = rnd.choice(["kill"] * 55 + ["segv"] * 15 + ["abort"] * 15 + ["bus"] * 10 +
                      ["exit"] * 5)
    tracer = rnd.choice(["function_graph"] * 3 + ["function"])
    prog = os.path.join(work, "p%d" % i)
    out = os.path.join(work, "t%d.dat" % i)
    n = rnd.randint(0, 3000)
    # one run in four: a 16 KiB ring that gives its pages back as they are
    # written (USFT_RING_KEEP=0), many laps, the writer waited for (lossless)
    small = rnd.random() < 0.25
    cmd = [e2e.ARGS.usft, "record", "-q", "-p", tracer, "-o", out] + \
        (["-b", "16", "--lossless"] if small else []) + \
        ["--", tracee("crash"), "loop" if mode == "kill" else mode, str(n), prog]
    renv = env()
    if small:
        renv["USFT_RING_KEEP"] = "0"
    p = subprocess.Popen(cmd, env=renv, cwd=work, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    sig = None
    if mode == "kill":
        deadline = time.time() + 10
        while time.time() < deadline:
            pr = progress(prog)
            if pr and pr[0] >= 0:
                break
            time.sleep(0.002)
        time.sleep(rnd.uniform(0, 0.02))
        sig = rnd.choice([signal.SIGKILL] * 3 + [signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS])
        for c in children(p.pid):
            os.kill(c, sig)
    _, err = p.communicate(timeout=60)
    err = err.decode(errors="replace")
    want_rc = {"kill": 128 + (sig or 0), "segv": 128 + signal.SIGSEGV,
               "abort": 128 + signal.SIGABRT, "bus": 128 + signal.SIGBUS, "exit": 3}[mode]
    check(p.returncode == want_rc, "run %d (%s): usft record exit %d, want %d: %s"
          % (i, mode, p.returncode, want_rc, err))
    pr = progress(prog)
    check(pr is not None, "run %d: no progress file" % i)
    calls, last, exitinfo, total = read_trace(out)
    main_tid = min(calls.get("crash_here", calls.get("step", {0: 0})))
    main = sum(calls.get("step", {}).values())
    second = sum(calls.get("step2", {}).values())
    what = "run %d (%s, %s)" % (i, mode, tracer)
    # progress[k] = c is stored before call c: calls 0..c-1 were made (c may be)
    check(pr[0] <= main <= pr[0] + 1,
          "%s: %d step() calls in the trace, the tracee made %d" % (what, main, pr[0]))
    # _exit: the second thread runs on, untraced, while the trace is finished
    check(mode == "exit" or pr[1] <= second <= pr[1] + 1,
          "%s: %d step2() calls in the trace, the tracee made %d" % (what, second, pr[1]))
    if mode != "kill":
        check(main == n, "%s: %d step() calls, want %d" % (what, main, n))
        check(last.get(main_tid) == "crash_here",
              "%s: the last function entered is %s, not crash_here" % (what, last.get(main_tid)))
    check(("status=killed" if mode != "exit" else "status=exited") in exitinfo,
          "%s: the file does not say how the process ended: %r" % (what, exitinfo))
    if i % 10 == 0:
        # the reader agrees with the oracle
        rc, text, rerr = e2e.usft("report", "-i", out)
        check(rc == 0, "%s: report failed: %s" % (what, rerr))
        check(count(text, tracer, "step") == main,
              "%s: report shows %d step() calls, the file holds %d"
              % (what, count(text, tracer, "step"), main))
        m = re.search(r"entries-written: (\d+)/", text)
        check(m and int(m.group(1)) == total, "%s: the header counts %s events, the file "
              "holds %d" % (what, m and m.group(1), total))
    os.unlink(out)
    os.unlink(prog)
    return mode


def check_report(out, tracer, func, want, what):
    """`usft report -i @out` reads the file and shows @want calls of @func"""
    rc, text, err = e2e.usft("report", "-i", out)
    check(rc == 0 and count(text, tracer, func) == want,
          "%s: report (%d) shows %d %s() calls, the file holds %d: %s"
          % (what, rc, count(text, tracer, func), func, want, err))
    return text


def seeded_runs(runs, run):
    """run(i, rnd) for i in 0..@runs-1 with one seeded random source (the
    seed printed, USFT_CRASH_SEED repeats it); Return: {mode it ran: times}"""
    seed = int(os.environ.get("USFT_CRASH_SEED", str(int(time.time()))))
    rnd = random.Random(seed)
    print("seed %d (USFT_CRASH_SEED=%d repeats this run)" % (seed, seed))
    modes = {}
    for i in range(runs):
        try:
            m = run(i, rnd)
        except Fail as f:
            raise Fail("seed %d: %s" % (seed, f))
        modes[m] = modes.get(m, 0) + 1
    print("%d runs: %s" % (runs, ", ".join("%s %d" % kv for kv in sorted(modes.items()))))
    return modes


def case_crash_safe():
    seeded_runs(RUNS, lambda i, rnd: one(i, rnd, e2e.ARGS.work))
    # the file says how it ended: one run's summary, checked in full
    prog = os.path.join(e2e.ARGS.work, "p")
    rc, out, err = e2e.usft("record", "-o", "s.dat", "--", tracee("crash"), "segv", "10", prog)
    check(rc == 128 + signal.SIGSEGV, "segv run: exit %d" % rc)
    check(re.search(r"tracee-crash-\d+ killed by SIGSEGV( \(core dumped\))?; \d+ events "
                    r"recovered", err), "the summary does not say how it ended:\n" + err)


def case_crash_in_write():
    """The salvage decides whether the drain the writer was inside reached the
    file.  libtracee-writekill.so kills the tracee inside the writer's
    writev() of an EVENTS chunk: before the write of a chunk the same size
    as one the thread wrote already (the case a size match took for
    written, losing the chunk's events), just after a write (which must
    not be appended twice), and after 20 bytes of a header (less than a
    header at the file's end: cut before the salvage appends).  Every call
    made is in the trace, once, and the file's chunks end where it ends."""
    work = e2e.ARGS.work
    lib = os.path.join(e2e.ARGS.tracees, "libtracee-writekill.so")
    for when in ("before", "after", "tiny"):
        for tracer in ("function", "function_graph"):
            prog = os.path.join(work, "wk-%s-%s" % (when, tracer))
            out = prog + ".dat"
            renv = env()
            renv.update({"LD_PRELOAD": lib, "WRITEKILL": when})
            # 16 KiB rings, lossless: the writer drains full rings, chunks of one size
            p = subprocess.run([e2e.ARGS.usft, "record", "-q", "-p", tracer, "-o", out,
                                "-b", "16", "--lossless", "--",
                                tracee("crash"), "loop", "0", prog], env=renv, cwd=work,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)
            what = "killed %s a write (%s)" % (when, tracer)
            err = p.stderr.decode(errors="replace")
            check(p.returncode == 128 + signal.SIGKILL, "%s: exit %d: %s"
                  % (what, p.returncode, err))
            pr = progress(prog)
            # either thread's calls (the second one's ring may fill first on a busy machine)
            check(pr is not None and max(pr[0], pr[1]) > 0, "%s: the tracee made no call" % what)
            calls, _, exitinfo, _ = read_trace(out)
            main = sum(calls.get("step", {}).values())
            second = sum(calls.get("step2", {}).values())
            check(pr[0] <= main <= pr[0] + 1 and pr[1] <= second <= pr[1] + 1,
                  "%s: %d and %d calls in the trace, the tracee made %d and %d"
                  % (what, main, second, pr[0], pr[1]))
            check("status=killed" in exitinfo, "%s: the file does not say how the process "
                  "ended: %r" % (what, exitinfo))
            walked = sum(32 + len(c[3]) for c in chunks(out))
            check(walked == os.path.getsize(out), "%s: the chunks end at %d, the file at %d"
                  % (what, walked, os.path.getsize(out)))
            os.unlink(out)
            os.unlink(prog)


def chunks(path):
    """(type, pid, arg, body) of each chunk of @path, in order"""
    with open(path, "rb") as f:
        data = f.read()
    pos = 0
    while pos + 32 <= len(data):
        _, _, typ, pid, _, size, arg = struct.unpack_from("<4sHHIIQQ", data, pos)
        yield typ, pid, arg, data[pos + 32:pos + 32 + size]
        pos += 32 + size


def chunk_types(path):
    """the chunk types of @path, in order"""
    return [c[0] for c in chunks(path)]


def case_crash_short_write():
    """A process killed inside a write can leave a short write: a chunk
    header and part of its body, and the other processes' chunks after it
    then read as its body.  libtracee-writekill.so (WRITEKILL=short) makes
    the fork child of tracee-crash write the header and 4 KiB of an EVENTS
    chunk, wait until its parent appended, and die; then the parent is
    killed.  The salvage makes the partial chunk a PAD chunk and appends it
    whole from the child's rings: every call of both processes is in the
    trace once (without the repair, the cut at the partial chunk loses what
    the parent wrote after it)."""
    work = e2e.ARGS.work
    lib = os.path.join(e2e.ARGS.tracees, "libtracee-writekill.so")
    for tracer in ("function", "function_graph"):
        prog = os.path.join(work, "sw-%s" % tracer)
        out = prog + ".dat"
        what = "short write (%s)" % tracer
        renv = env()
        renv.update({"LD_PRELOAD": lib, "WRITEKILL": "short"})
        p = subprocess.Popen([e2e.ARGS.usft, "record", "-q", "-p", tracer, "-o", out, "--",
                              tracee("crash"), "loop", "0", prog, "go", "child"], env=renv,
                             cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            wait_word(prog, 1, lambda v: v >= 0, what, 30)
            set_go(prog)    # the parent forks now
            wait_word(prog, 6, lambda v: v == 1, what)  # the child died, reaped
            kid = progress_words(prog)[5]
            pid = children(p.pid)[0]
            os.kill(pid, signal.SIGKILL)
            _, err = p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
        err = err.decode(errors="replace")
        check(p.returncode == 128 + signal.SIGKILL, "%s: exit %d: %s" % (what, p.returncode, err))
        pr = progress_words(prog)
        calls, _, _, _ = read_trace(out)
        main = calls.get("step", {}).get(pid, 0)
        second = sum(v for k, v in calls.get("step2", {}).items())
        child = calls.get("cstep", {}).get(kid, 0)
        check(pr[0] <= main <= pr[0] + 1 and pr[1] <= second <= pr[1] + 1,
              "%s: %d and %d calls of the parent in the trace, it made %d and %d"
              % (what, main, second, pr[0], pr[1]))
        check(pr[4] <= child <= pr[4] + 1, "%s: %d cstep() calls of the child in the trace, "
              "it made %d" % (what, child, pr[4]))
        check(9 in chunk_types(out), "%s: no PAD chunk: the child's short write was not "
              "followed by its parent's chunks (the case was not made)" % what)
        check_report(out, tracer, "cstep", child, what)
        os.unlink(out)
        os.unlink(prog)


def lost_in(path):
    """events the EVENTS chunks of @path count as lost (their arg)"""
    return sum(arg for typ, _, arg, _ in chunks(path) if typ == 2)


def kernel_at_least(major, minor):
    m = re.match(r"(\d+)\.(\d+)", os.uname().release)
    return bool(m) and (int(m.group(1)), int(m.group(2))) >= (major, minor)


def kill_both(t, kid):
    """tracee-crash @t and its child @kid (0: none) gone"""
    if kid:
        try:
            os.kill(kid, signal.SIGKILL)
        except OSError:
            pass
    if t.poll() is None:
        t.kill()
    t.wait(timeout=60)


def record_pid(pid, tracer, out, work, what):
    """`usft record -P @pid` started; Return: it and its stderr up to its start"""
    rec = subprocess.Popen([e2e.ARGS.usft, "record", "-P", str(pid), "-p", tracer, "-o", out],
                           env=env(), cwd=work, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
    err = ""
    for line in rec.stderr:
        err += line
        if "recording process" in line:
            break
    check("recording process" in err, "%s: record -P did not start: %s" % (what, err))
    return rec, err


def set_go(prog):
    """tracee-crash's word 2: the N calls count from now (and "child" forks)"""
    with open(prog, "r+b") as f:
        f.seek(16)
        f.write(struct.pack("<q", 1))


def attach_one(i, rnd, work, reap_early_ok):
    """`usft record -P` of a running tracee-crash, which then dies: killed
    from outside at a random point, or by its own fault N calls after the
    recording started.  The tracee is not usft's child."""
    mode = rnd.choice(["kill"] * 3 + ["segv", "abort"])
    tracer = rnd.choice(["function_graph"] * 3 + ["function"])
    prog = os.path.join(work, "a%d" % i)
    out = os.path.join(work, "a%d.dat" % i)
    n = rnd.randint(0, 2000)
    t = subprocess.Popen([tracee("crash"), "loop" if mode == "kill" else mode, str(n), prog,
                          "go"], env=env(), cwd=work, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    deadline = time.time() + 10
    while time.time() < deadline and not (progress(prog) and progress(prog)[1] >= 0):
        time.sleep(0.002)
    p0 = progress(prog)
    rec, err = record_pid(t.pid, tracer, out, work, "run %d" % i)
    p1 = progress(prog)     # every call after these is traced
    set_go(prog)            # the N calls before the crash count now
    sig = {"segv": signal.SIGSEGV, "abort": signal.SIGABRT}.get(mode)
    if mode == "kill":
        time.sleep(rnd.uniform(0, 0.03))
        sig = rnd.choice([signal.SIGKILL] * 3 + [signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS])
        t.send_signal(sig)
    # the recorder is not the parent: its parent may reap it first (then
    # only the pidfd, Linux 6.15, still knows how it ended)
    reaped = reap_early_ok and rnd.random() < 0.3
    if reaped:
        t.wait(timeout=60)
    _, rest = rec.communicate(timeout=60)
    err += rest
    t.wait(timeout=60)
    what = "attach run %d (%s, %s%s)" % (i, mode, tracer, ", reaped first" if reaped else "")
    check(rec.returncode == 0, "%s: usft record -P exit %d: %s" % (what, rec.returncode, err))
    pr = progress(prog)
    calls, last, exitinfo, total = read_trace(out)
    main = sum(calls.get("step", {}).values())
    second = sum(calls.get("step2", {}).values())
    lost = lost_in(out)
    # progress[k] = c is stored before call c: calls 0..c-1 were made (c may
    # be); once START answered, every call that begins is traced
    check(main <= pr[0] - p0[0] + 1 and second <= pr[1] - p0[1] + 1,
          "%s: more calls in the trace (%d, %d) than made since the attach began (%d, %d)"
          % (what, main, second, pr[0] - p0[0], pr[1] - p0[1]))
    if lost:
        print("%s: %d events lost (the writer fell behind): counts not checked" % (what, lost))
    else:
        check(main >= pr[0] - p1[0] - 1,
              "%s: %d step() calls in the trace, the tracee made %d after the start"
              % (what, main, pr[0] - p1[0] - 1))
        check(second >= pr[1] - p1[1] - 1,
              "%s: %d step2() calls in the trace, the tracee made %d after the start"
              % (what, second, pr[1] - p1[1] - 1))
    if mode != "kill":
        main_tid = min(calls.get("crash_here", {0: 0}))
        check("crash_here" in calls and last.get(main_tid) == "crash_here",
              "%s: the last function entered is %s, not crash_here"
              % (what, last.get(main_tid)))
    check("status=killed" in exitinfo and "signal=%d\n" % sig in exitinfo,
          "%s: the file does not say how the process ended (signal %d): %r"
          % (what, sig, exitinfo))
    check(re.search(r"tracee-crash-%d killed by SIG%s" % (t.pid, signal.Signals(sig).name[3:]),
                    err), "%s: the summary does not say how it ended:\n%s" % (what, err))
    if i % 5 == 0:
        check_report(out, tracer, "step", main, what)
    os.unlink(out)
    os.unlink(prog)
    return mode


def case_attach_crash_safe():
    """usft record -P: the rings of an attached process are a memfd it sends
    the recorder at START; a process that dies while recorded loses nothing
    it wrote, and the file says how it ended (docs/attach.md)."""
    early = kernel_at_least(6, 15)
    seeded_runs(int(os.environ.get("USFT_ATTACH_CRASH_RUNS", "12")),
                lambda i, rnd: attach_one(i, rnd, e2e.ARGS.work, early))


def progress_words(path, n=8):
    try:
        with open(path, "rb") as f:
            return struct.unpack("<%dq" % n, f.read(8 * n))
    except (OSError, struct.error):
        return None


def exits_by_pid(path):
    """{pid: the text of its EXIT chunk} of @path"""
    return {pid: body.rstrip(b"\0").decode() for typ, pid, _, body in chunks(path) if typ == 8}


def wait_word(path, k, pred, what, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        w = progress_words(path)
        if w and pred(w[k]):
            return w
        time.sleep(0.002)
    raise Fail("%s: progress word %d never came (%r)" % (what, k, progress_words(path)))


def attach_child_one(i, rnd, work):
    """`usft record -P` of tracee-crash, which forks a child once the
    recording runs; the child dies (a signal from outside at a random
    point, or its own fault after N calls) and the parent reaps it; then the
    recording ends by ^C, or by the parent's death.  Every call the child
    made is in the file, named, its last function entered before a fault
    is crash_here(), and the file and the summary say how it ended."""
    mode = rnd.choice(["kill"] * 3 + ["segv", "abort", "bus", "exit"])
    tracer = rnd.choice(["function_graph"] * 2 + ["function"])
    end = rnd.choice(["sigint", "sigint", "parent_killed"])
    left_running = mode == "kill" and rnd.random() < 0.2
    prog = os.path.join(work, "c%d" % i)
    out = os.path.join(work, "c%d.dat" % i)
    n = rnd.randint(0, 3000)
    what = "child run %d (%s, %s, %s%s)" % (i, mode, tracer, end,
                                          ", child left running" if left_running else "")
    t = subprocess.Popen([tracee("crash"), "loop" if mode == "kill" else mode, str(n), prog,
                          "go", "child"], env=env(), cwd=work, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    kid = 0
    try:
        wait_word(prog, 1, lambda v: v >= 0, what, 10)
        rec, err = record_pid(t.pid, tracer, out, work, what)
        if i == 0:          # the socket the children send on, as `usft stat -P` shows it
            st = subprocess.run([e2e.ARGS.usft, "stat", "-P", str(t.pid)], env=env(),
                                capture_output=True, text=True, timeout=30)
            check(re.search(r"children_socket\s+held", st.stdout) and
                  re.search(r"trace_clock\s+[a-z]+", st.stdout),
                  "%s: usft stat -P does not show the children's socket held:\n%s%s"
                  % (what, st.stdout, st.stderr))
        set_go(prog)        # the parent forks now
        kid = wait_word(prog, 5, lambda v: v > 0, what)[5]
        sig = {"segv": signal.SIGSEGV, "abort": signal.SIGABRT, "bus": signal.SIGBUS}.get(mode)
        if mode == "kill" and not left_running:
            time.sleep(rnd.uniform(0, 0.03))
            sig = rnd.choice([signal.SIGKILL] * 3 + [signal.SIGSEGV, signal.SIGABRT,
                                                     signal.SIGBUS])
            os.kill(kid, sig)
        if not left_running:
            wait_word(prog, 6, lambda v: v == 1, what)    # the parent reaped it
        pr = progress_words(prog)
        if end == "parent_killed":
            t.kill()
        else:
            rec.send_signal(signal.SIGINT)
        _, rest = rec.communicate(timeout=60)
        err += rest
        check(rec.returncode == 0, "%s: usft record -P exit %d: %s" % (what, rec.returncode, err))
    finally:
        kill_both(t, kid if left_running else 0)
    if left_running:
        check(re.search(r"1 process forked while recorded still runs", err),
              "%s: the summary does not say the child still runs:\n%s" % (what, err))
        os.unlink(out)
        os.unlink(prog)
        return "left running"
    calls, last, _, _ = read_trace(out)
    made = pr[4]        # cstep() calls 0..made-1 made (a fault: exactly N)
    traced = calls.get("cstep", {}).get(kid, 0)
    if lost_in(out):
        print("%s: events lost (the writer fell behind): counts not checked" % what)
    elif mode == "kill":
        check(made - 1 <= traced <= made + 1,
              "%s: %d cstep() calls of the child in the trace, it made %d" % (what, traced, made))
    else:
        check(traced == n, "%s: %d cstep() calls of the child in the trace, it made %d"
              % (what, traced, n))
    if mode != "kill":
        check(last.get(kid) == "crash_here",
              "%s: the child's last function entered is %s, not crash_here"
              % (what, last.get(kid)))
    ex = exits_by_pid(out).get(kid, "")
    if mode == "exit":
        check("status=exited" in ex and "code=3" in ex,
              "%s: the file does not say the child exited with 3: %r" % (what, ex))
    else:
        check("status=killed" in ex and "signal=%d\n" % sig in ex,
              "%s: the file does not say how the child ended (signal %d): %r" % (what, sig, ex))
        check(re.search(r"tracee-crash-%d killed by SIG%s" % (kid, signal.Signals(sig).name[3:]),
                        err), "%s: the summary does not say how the child ended:\n%s"
              % (what, err))
    if end == "parent_killed":
        check("status=killed" in exits_by_pid(out).get(t.pid, ""),
              "%s: the file does not say the parent was killed" % what)
    # the recovered events are named: the child's parent's names (a fork)
    text = check_report(out, tracer, "cstep", traced, what)
    check(not re.search(r"tracee-crash-%d .*0x[0-9a-f]+\(\)" % kid, text),
          "%s: the child's events are not all named" % what)
    os.unlink(out)
    os.unlink(prog)
    return mode


def wait_file(path, what, timeout=10, unless=None):
    """@path made; Return: False if @unless was made instead"""
    deadline = time.time() + timeout
    while time.time() < deadline and not os.path.exists(path):
        if unless and os.path.exists(unless):
            return False
        time.sleep(0.002)
    check(os.path.exists(path), "%s: %s never came" % (what, os.path.basename(path)))
    return True


# writev, pwrite64, ftruncate
FILE_WRITES = {"x86_64": {20, 18, 77}, "aarch64": {66, 68, 46}}.get(os.uname().machine, set())


def proc_state(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def in_syscall(pid):
    """the number of the system call @pid's main thread is in, or None"""
    try:
        with open("/proc/%d/syscall" % pid) as f:
            first = f.read().split()[0]
        return int(first) if first.lstrip("-").isdigit() else None
    except (OSError, IndexError, ValueError):
        return None


def case_salvage_live_chunk():
    """A salvage runs while another process of the trace is inside a write:
    its chunk is only partly in the file.  tracee-crash forks a child under
    `usft record -P`; libtracee-writekill.so (WRITEKILL=pause) holds the
    child's next EVENTS chunk inside its writev() (userfaultfd) while the
    parent is killed, until the recorder salvaging the parent blocks on
    the file behind that write.  The file must read whole: the salvage once
    cut it at the chunk under way (its ftruncate() waited for the write,
    then cut it)."""
    work = e2e.ARGS.work
    what = "salvage beside a live write"
    prog = os.path.join(work, "lc")
    out = prog + ".dat"
    flag = prog + ".flag"
    for f in (flag, flag + ".arm", flag + ".done", flag + ".nouffd"):
        if os.path.exists(f):
            os.unlink(f)
    renv = env()
    renv.update({"LD_PRELOAD": os.path.join(e2e.ARGS.tracees, "libtracee-writekill.so"),
                 "WRITEKILL": "pause", "WRITEKILL_FLAG": flag})
    t = subprocess.Popen([tracee("crash"), "loop", "0", prog, "go", "child"], env=renv, cwd=work,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kid = 0
    try:
        wait_word(prog, 1, lambda v: v >= 0, what, 10)
        rec, err = record_pid(t.pid, "function", out, work, what)
        set_go(prog)
        kid = wait_word(prog, 5, lambda v: v > 0, what)[5]
        # the parent stopped, so it is not inside a write of its own (the
        # child's would hold it there, where SIGKILL cannot reach it)
        t.send_signal(signal.SIGSTOP)
        deadline = time.time() + 10
        while time.time() < deadline and proc_state(t.pid) != "T":
            time.sleep(0.002)
        check(proc_state(t.pid) == "T", "%s: the parent did not stop" % what)
        open(flag + ".arm", "w").close()
        if not wait_file(flag, what, unless=flag + ".nouffd"):
            print("skipped: no userfaultfd here (the chunk cannot be held in its write)")
            raise SystemExit(77)
        # the child's chunk: partly in the file
        t.kill()
        t.wait(timeout=60)
        # the recorder salvages the parent: it blocks on the trace file
        # (a write, or the old cut) behind the child's write
        deadline = time.time() + 20
        while rec.poll() is None and time.time() < deadline and \
                in_syscall(rec.pid) not in FILE_WRITES:
            time.sleep(0.002)
        check(rec.poll() is None, "%s: the recorder ended beside a write under way" % what)
        os.unlink(flag)
        _, rest = rec.communicate(timeout=60)
        err += rest
        check(rec.returncode == 0, "%s: usft record -P exit %d: %s" % (what, rec.returncode, err))
        wait_file(flag + ".done", what)  # and now whole
        os.kill(kid, signal.SIGSTOP)
        time.sleep(0.05)
        with open(flag + ".done") as f:
            size, first = (int(x) for x in f.read().split())
        with open(out, "rb") as f:
            data = f.read()
        pos, kinds, held = 0, set(), False
        while pos + 32 <= len(data):
            magic, ver, typ, pid, _, csize, _ = struct.unpack_from("<4sHHIIQQ", data, pos)
            check(magic == b"USFT" and ver == 1 and pos + 32 + csize <= len(data),
                  "%s: a damaged chunk at %d of %d: %r" % (what, pos, len(data),
                                                          data[pos:pos + 32]))
            kinds.add((typ, pid))
            held = held or (typ == 2 and pid == kid and csize == size and
                            struct.unpack_from("<Q", data, pos + 32)[0] == first)
            pos += 32 + csize
        check(pos == len(data), "%s: %d bytes after the last chunk" % (what, len(data) - pos))
        check(held, "%s: the child's chunk that was under way (%d bytes) is not in the file"
              % (what, size))
        check((6, t.pid) in kinds, "%s: no END of the parent: %s" % (what, kinds))
    finally:
        kill_both(t, kid)
    for f in (out, prog, flag + ".arm", flag + ".done", flag + ".nouffd"):
        if os.path.exists(f):
            os.unlink(f)


def case_attach_many_children():
    """usft record -P holds two descriptors per child the process forks
    while recorded (its rings, a pidfd): it lets them go once a child is
    gone, so a process that forks children all the time does not run it
    out of descriptors.  tracee-churn forks a child every few ms; the
    recorder runs with a limit of 40 descriptors for 4 s: no child's
    packet is refused (with every child's kept to the end, about fifteen
    children filled the limit)."""
    import resource
    work = e2e.ARGS.work
    out = os.path.join(work, "many.dat")
    t = subprocess.Popen([tracee("churn"), "0", "0"], env=env(), cwd=work,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        check(t.stdout.readline().startswith(b"ready"), "tracee-churn did not start")
        rec = subprocess.run([e2e.ARGS.usft, "record", "-P", str(t.pid), "-p", "function",
                              "--duration", "4", "-o", out], env=env(), cwd=work,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120,
                             preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE,
                                                                   (40, 40)))
        err = rec.stderr.decode(errors="replace")
        check(rec.returncode == 0, "usft record -P exit %d: %s" % (rec.returncode, err[-2000:]))
        check("did not parse or found no room" not in err, "children refused for want of "
              "descriptors:\n%s" % "\n".join(l for l in err.splitlines() if "packet" in l))
        check(re.search(r"\b([2-9]|\d\d+) processes", err),
              "fewer than 2 processes recorded:\n%s" % err[-2000:])
    finally:
        t.send_signal(signal.SIGTERM)
        o, _ = t.communicate(timeout=60)
    last = o.decode().strip().splitlines()[-1]
    check(t.returncode == 0 and re.match(r"ok gen=0 bad=0 children=[1-9]", last),
          "tracee-churn: %d %r" % (t.returncode, last))
    os.unlink(out)


def case_attach_child_crash_safe():
    """usft record -P: a child the attached process forks while recorded
    sends its rings' memfd to the recorder (the socket START carried), so
    it loses nothing it wrote when it dies either (docs/attach.md)."""
    seeded_runs(int(os.environ.get("USFT_ATTACH_CHILD_RUNS", "10")),
                lambda i, rnd: attach_child_one(i, rnd, e2e.ARGS.work))


def max_rss_kb(cmd, lines=None):
    """run @cmd (its output read, or only its first @lines lines); its max RSS"""
    p = subprocess.Popen(cmd, env=env(), cwd=e2e.ARGS.work, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    n = 0
    for _ in p.stdout:
        n += 1
        if lines and n >= lines:
            break
    p.stdout.close()
    _, status, ru = os.wait4(p.pid, 0)
    return ru.ru_maxrss, n, status


def case_report_stream():
    """usft report's text formats stream the events from the file: its memory
    does not follow the trace's size, `| head` needs only the first events,
    and the output is the one the loading reader gives."""
    work = e2e.ARGS.work
    out = os.path.join(work, "big.dat")
    rc, _, err = e2e.usft("record", "-p", "function", "-o", out, "--", tracee("loop"), "3000000")
    check(rc == 0 and "3000001 events, 0 lost" in err, "record: %d %s" % (rc, err))
    size_mb = os.path.getsize(out) >> 20
    rss, n, _ = max_rss_kb([e2e.ARGS.usft, "report", "-i", out], lines=5)
    check(n == 5 and rss < 48 * 1024, "report | head: %d lines, max RSS %d KB (%d MB trace)"
          % (n, rss, size_mb))
    rss, n, st = max_rss_kb([e2e.ARGS.usft, "report", "-i", out])
    check(st == 0 and n > 3000000 and rss < 48 * 1024,
          "report: %d lines, max RSS %d KB for a %d MB trace" % (n, rss, size_mb))
    print("report of a %d MB trace: max RSS %d KB" % (size_mb, rss))
    # every other view and format streams too
    for what in (["info"], ["report", "-s", "calls"]):
        rss, n, st = max_rss_kb([e2e.ARGS.usft] + what + ["-i", out])
        check(st == 0 and n > 2 and rss < 48 * 1024,
              "%s: %d lines, max RSS %d KB for a %d MB trace" % (" ".join(what), n, rss, size_mb))
    os.unlink(out)
    # the same output as the loading reader (USFT_REPORT_LOAD=1) and from a
    # pipe (copied into TMPDIR, then streamed): two threads, leaves, a
    # crash; --tid selects threads in all
    prog = os.path.join(work, "p")
    views = {"function_graph": [[], ["--format", "json"], ["--summary"], ["--graph", "main"],
                                ["--format", "folded"]],
             "function": [[], ["--format", "json"], ["--summary"]]}
    for tracer in ("function_graph", "function"):
        rc, _, err = e2e.usft("record", "-p", tracer, "-o", out, "--", tracee("crash"), "segv",
                              "20000", prog)
        rc, streamed, _ = e2e.usft("report", "-i", out)
        tids = sorted(set(re.findall(r"tracee-crash-(\d+)", streamed)))
        check(tids, "%s: no thread in the report" % tracer)
        for extra in views[tracer] + [["--tid", tids[0]]]:
            rc, streamed, _ = e2e.usft("report", "-i", out, *extra)
            _, loaded, _ = e2e.usft("report", "-i", out, *extra, env={"USFT_REPORT_LOAD": "1"})
            with open(out, "rb") as f:
                piped = subprocess.run([e2e.ARGS.usft, "report", "-i", "/dev/stdin"] + extra,
                                       input=f.read(), stdout=subprocess.PIPE, env=env(),
                                       cwd=work).stdout.decode()
            check(rc == 0 and streamed == loaded, "%s %s: streamed and loaded reports differ"
                  % (tracer, " ".join(extra)))
            check(piped == loaded, "%s %s: a piped trace's report differs"
                  % (tracer, " ".join(extra)))


def case_report_stream_values():
    """-A/-R values stream with their events, and a piped trace is streamed
    (copied into TMPDIR first): the report's memory does not follow the
    trace's size (the loading reader needs about 54 MB for this 22 MB trace;
    a forked Python child starts at about 18); the pipe gives the file's
    output (e2e_args compares values with the loading reader)."""
    work = e2e.ARGS.work
    out = os.path.join(work, "vals.dat")
    rc, _, err = e2e.usft("record", "-p", "function_graph", "-A", "work@arg1", "-R",
                          "work@retval", "-o", out, "--", tracee("loop"), "250000")
    check(rc == 0 and "500002 events, 0 lost" in err, "record: %d %s" % (rc, err))
    size_mb = os.path.getsize(out) >> 20
    got = {}
    for how in ("file", "pipe"):
        with open(out, "rb") as f:
            p = subprocess.Popen([e2e.ARGS.usft, "report", "-i",
                                  out if how == "file" else "/dev/stdin"],
                                 stdin=f if how == "pipe" else subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env(),
                                 cwd=work)
            # read in pieces: this process's memory is what the next child starts with
            digest, seen, tail = hashlib.sha256(), False, b""
            for piece in iter(lambda: p.stdout.read(1 << 16), b""):
                digest.update(piece)
                seen = seen or b"work(7) = 8;" in tail + piece
                tail = piece[-16:]
            _, status, ru = os.wait4(p.pid, 0)
        check(status == 0 and ru.ru_maxrss < 32 * 1024,
              "report from a %s with values: max RSS %d KB for a %d MB trace"
              % (how, ru.ru_maxrss, size_mb))
        got[how] = (digest.hexdigest(), ru.ru_maxrss, seen)
    check(got["file"][2], "no values in the report")
    check(got["pipe"][0] == got["file"][0], "piped and file reports differ")
    print("%d MB trace with values: max RSS %d KB from the file, %d KB from a pipe"
          % (size_mb, got["file"][1], got["pipe"][1]))


def head(path, lines):
    """the first @lines lines of `usft report -i @path` (it streams)"""
    p = subprocess.Popen([e2e.ARGS.usft, "report", "-i", path], env=env(), cwd=e2e.ARGS.work,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    got = [p.stdout.readline() for _ in range(lines)]
    p.stdout.close()
    p.wait()
    return "".join(got)


def end_counts(path):
    """the END chunks' key=value numbers of @path, summed"""
    sums = {}
    for typ, _, _, body in chunks(path):
        if typ == 6:                    # END
            for kv in body.rstrip(b"\0").decode().split():
                k, _, v = kv.partition("=")
                if v.isdigit():
                    sums[k] = sums.get(k, 0) + int(v)
    return sums


def case_ring_give_back():
    """A ring larger than USFT_RING_KEEP gives its pages back as the writer
    writes them out (docs/tracers.md, "Memory"): a 1 GiB ring, 72 MB of
    events (3M function_graph leaves).  What the code guarantees, whatever
    the scheduler does: every whole page written out is given back (the END
    chunk's given_back_bytes: all of drained_bytes but the last page of
    each thread's ring), none when the pages are kept (USFT_RING_KEEP above
    the ring), where the tracee's RSS then holds the whole trace; and every
    event is in the file (the ring never fills).  The RSS with pages given
    back follows how far the writer lags, so it is printed, not checked."""
    out = os.path.join(e2e.ARGS.work, "g.dat")
    rss = {}
    for keep in ("", str(2 << 30)):
        renv = env()
        if keep:
            renv["USFT_RING_KEEP"] = keep
        cmd = [e2e.ARGS.usft, "record", "-q", "-p", "function_graph", "-b", str(1 << 20),
               "-o", out, "--", tracee("loop"), "3000000"]
        p = subprocess.Popen(cmd, env=renv, cwd=e2e.ARGS.work, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        check(status == 0, "record (keep=%r): status %d" % (keep, status))
        text = head(out, 4)
        m = re.search(r"entries-written: (\d+)/(\d+)", text)
        check(m and m.group(1) == m.group(2) == "6000002",
              "keep=%r: %s events in the file, want 6000002" % (keep, m and m.groups()))
        end = end_counts(out)
        drained, given = end.get("drained_bytes", 0), end.get("given_back_bytes", -1)
        threads = max(end.get("threads", 1), 1)
        if keep:
            check(given == 0, "pages kept: %d bytes given back" % given)
        else:
            check(drained >= 72 * 10**6 and drained - 4096 * threads <= given <= drained,
                  "pages given back: %d of the %d bytes written out" % (given, drained))
        rss[keep] = ru.ru_maxrss >> 10
    os.unlink(out)
    print("max RSS: pages given back %d MB, kept %d MB" % (rss[""], rss[str(2 << 30)]))
    check(rss[str(2 << 30)] >= 64, "pages kept: max RSS %d MB, a ring that keeps its "
          "pages should hold the 72 MB trace" % rss[str(2 << 30)])


CASES = {k[5:]: v for k, v in globals().items() if k.startswith("case_")}
e2e.CASES = CASES

if __name__ == "__main__":
    sys.exit(e2e.main())
