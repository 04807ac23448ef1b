#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of `usft record -P`, `usft attach/detach/stat -P` and the
control socket (docs/attach.md), on samples/tracee/server.c and friends.

attach.py CASE --usft PATH --tracees DIR --work DIR
Each case starts its own tracee, checks what it asks, and leaves no process
behind.  Never asserts a time.
"""
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import ARGS, Fail, Server, check, env, tracee, usft  # noqa: E402,F401


def text_ranges(pid):
    """(lo, hi) of every executable file mapping of the tracee's own objects."""
    out = []
    for line in open("/proc/%d/maps" % pid):
        f = line.split()
        if len(f) >= 6 and "x" in f[1] and f[5].startswith("/") and "usft" not in f[5] \
                and "tracee-" in f[5]:
            lo, hi = (int(x, 16) for x in f[0].split("-"))
            out.append((lo, hi))
    return out


def read_text(pid):
    data = []
    with open("/proc/%d/mem" % pid, "rb") as m:
        for lo, hi in text_ranges(pid):
            m.seek(lo)
            data.append(m.read(hi - lo))
    return data


def usft_threads(pid):
    names = []
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            names.append(open("/proc/%d/task/%s/comm" % (pid, t)).read().strip())
        except OSError:
            pass
    return [n for n in names if n.startswith("usft-")]


def status_field(pid, key):
    for line in open("/proc/%d/status" % pid):
        if line.startswith(key + ":"):
            return line.split(":", 1)[1].strip()
    return None


def stopped_threads(pid):
    """threads in a stopped/traced state (t/T), which detach must not leave"""
    n = 0
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            st = open("/proc/%d/task/%s/stat" % (pid, t)).read()
        except OSError:
            continue
        state = st[st.rindex(")") + 2]
        n += state in "tT"
    return n


def report(path):
    rc, out, err = usft("report", "-i", path)
    check(rc == 0, "usft report failed (%d): %s" % (rc, err))
    return out


def check_server_result(srv):
    """Every result right, and no EINTR but the documented kind: accept()
    restarts under the rendezvous handler's SA_RESTART and must never see it;
    poll() and nanosleep() are never restarted by the kernel, and the
    runtime's signal rendezvous (a reclaim scan) may still reach a thread
    that was runnable at that instant (docs/attach.md "EINTR: which calls
    may see it").  Those are counted and printed, not hidden."""
    rc, out, err = srv.stop()
    m = re.search(r"rounds=(\d+) bad=(\d+) eintr_poll=(\d+) eintr_sleep=(\d+) "
                  r"eintr_accept=(\d+)", out)
    check(m is not None, "tracee-server printed no results (%d): %s %s" % (rc, out, err))
    rounds, bad, e_poll, e_sleep, e_accept = (int(g) for g in m.groups())
    check(rounds > 0 and bad == 0 and e_accept == 0,
          "tracee-server results (%d): %r %s" % (rc, out, err))
    check(rc == (1 if e_poll or e_sleep else 0), "tracee-server failed (%d): %s %s" % (rc, out, err))
    if e_poll or e_sleep:
        print("documented EINTR from the runtime's rendezvous: poll %d, nanosleep %d"
              % (e_poll, e_sleep))


# ---- cases ------------------------------------------------------------------

def ctl_path(pid):
    """the control socket of @pid (control.h: the first of its directories)"""
    for d in ("%s/usft" % os.environ.get("XDG_RUNTIME_DIR", "/nonexistent"), "/run/usft",
              "/tmp/usft-%d" % os.getuid()):
        if os.path.exists(os.path.join(d, "%d.sock" % pid)):
            return os.path.join(d, "%d.sock" % pid)
    raise Fail("no control socket for %d" % pid)


def ctl_conn(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(5)
    s.connect(path)
    return s


def ctl_req(s, op, text=b"", raw=None):
    """one request (docs/attach.md); Return: (status, reply text), (None, None) closed"""
    s.send(raw if raw is not None else
           struct.pack("<IHHIiII", 0x43465355, 1, op, 0, 0, len(text), 0) + text)
    out = b""
    while True:
        p = s.recv(24 + 65536)
        if not p:
            return None, None
        magic, ver, rop, flags, status, n, _ = struct.unpack("<IHHIiII", p[:24])
        out += p[24:24 + n]
        if not flags & 1:
            return status, out.decode()


def case_record_triggers():
    """record -P carries -N, -A, -T and --signal over the control channel: the
    attached runtime applies them (depth=N cuts mix below work, -N drops
    blocked_sum, -A shows checksum's n); after the detach no hook is left
    (SigCgt as before); a finish trigger ends the recording in the process,
    and record -P returns then;
    a value that does not parse is refused at WRITE."""
    srv = Server()
    try:
        before = read_text(srv.pid)
        caught = status_field(srv.pid, "SigCgt")
        rc, out, err = usft("record", "-P", srv.pid, "-p", "function_graph", "-l", "work",
                            "-l", "checksum", "-l", "mix", "-l", "blocked_sum",
                            "-N", "blocked_sum", "-T", "work@depth=2", "-A", "checksum@arg2",
                            "--signal", "SIGUSR2@trace_off", "--duration", "0.2", "-o", "t.dat")
        check(rc == 0, "record -P failed (%d): %s" % (rc, err))
        text = report("t.dat")
        check("work() {" in text and "checksum(200);" in text, "no work/checksum(200):\n" + text[:2000])
        # inside work() (entered after the attach): no mix (depth), never blocked_sum (-N);
        # a call already running at the attach has no depth bound yet
        inside = {}
        for line in text.splitlines():
            m = re.match(r"\s*\d+\)\s+(\S+)\s+\|[^|]*\|\s*(.*)$", line)
            if not m:
                continue
            tid, fn = m.group(1), m.group(2)
            check("blocked_sum" not in fn, "-N ignored: " + line)
            if fn.startswith("work() {"):
                inside[tid] = True
            elif fn.startswith("} /* work */"):
                inside[tid] = False
            check(not (inside.get(tid) and "mix" in fn), "depth=2 ignored: " + line)
        check(read_text(srv.pid) == before, "text differs after detach")
        usr2 = 1 << (signal.SIGUSR2 - 1)
        check(int(status_field(srv.pid, "SigCgt"), 16) & usr2 == int(caught, 16) & usr2,
              "SIGUSR2 hook left: SigCgt %s, was %s" % (status_field(srv.pid, "SigCgt"), caught))
        # no --duration: the runtime's word that the finish ended it ends the wait
        rc, out, err = usft("record", "-P", srv.pid, "-p", "function_graph", "-l", "work",
                            "-T", "work@finish", "-o", "f.dat", timeout=60)
        check(rc == 0 and "had ended there" in err, "finish over -P (%d): %s" % (rc, err))
        check(read_text(srv.pid) == before, "text differs after finish")
        rc, out, err = usft("attach", srv.pid)
        check(rc == 0, "attach (%d): %s" % (rc, err))
        s = ctl_conn(ctl_path(srv.pid))
        for name, value in ((b"triggers", b"work@bogus"), (b"signal_triggers", b"SIGSEGV@finish"),
                            (b"argument", b"checksum"), (b"options/funcgraph-retval", b"2")):
            st, t = ctl_req(s, 3, name + b"\n" + value)
            check(st == -22 and t, "WRITE %s %s: %s %r" % (name, value, st, t))
        st, t = ctl_req(s, 2, b"triggers")
        check(st == 0 and t == "work@finish\n", "triggers after refused writes: %r" % t)
        s.close()
        rc, out, err = usft("detach", srv.pid)
        check(rc == 0, "detach (%d): %s" % (rc, err))
        check_server_result(srv)
    finally:
        srv.kill()


def case_record():
    """record -P: a call tree; detach: text identical, threads gone."""
    srv = Server()
    try:
        before = read_text(srv.pid)
        rc, out, err = usft("record", "-P", srv.pid, "-p", "function_graph", "-l", "work",
                            "-l", "checksum", "-l", "blocked_sum", "--duration", "0.1",
                            "-o", "g.dat")
        check(rc == 0, "record -P failed (%d): %s" % (rc, err))
        check(re.search(r"usft: \d+ events", err), "no summary: " + err)
        text = report("g.dat")
        check("work() {" in text and "checksum();" in text and "blocked_sum();" in text,
              "no call tree:\n" + text[:2000])
        check(read_text(srv.pid) == before, "text differs after detach")
        check(not usft_threads(srv.pid), "usft threads left: %s" % usft_threads(srv.pid))
        check(status_field(srv.pid, "TracerPid") == "0", "still traced")
        check(stopped_threads(srv.pid) == 0, "threads left stopped")
        # again: the loaded runtime is reused, function tracer this time
        rc, out, err = usft("record", "-P", srv.pid, "-p", "function", "-l", "checksum",
                            "--duration", "0.2", "-o", "f.dat")
        check(rc == 0, "second record -P failed (%d): %s" % (rc, err))
        text = report("f.dat")
        check("checksum <-" in text and "mix" not in text, "filter -l checksum:\n" + text[:2000])
        maps = open("/proc/%d/maps" % srv.pid).read()
        check(maps.count("libusft-preload.so") <= 5, "runtime loaded twice?\n" + maps)
        check(read_text(srv.pid) == before, "text differs after the second detach")
        check_server_result(srv)
    finally:
        srv.kill()


def case_control():
    """attach, stat -P, enabled_functions, garbage, another uid, detach."""
    srv = Server()
    try:
        rc, out, err = usft("attach", srv.pid)
        check(rc == 0 and "usft-control 1" in out, "attach (%d): %s %s" % (rc, out, err))
        rc, out, err = usft("stat", "-P", srv.pid)
        check(rc == 0 and re.search(r"nr_sites\s+[1-9]", out), "stat -P: %s %s" % (out, err))
        # not recording: no tracer, no socket for children's rings
        check(re.search(r"recording:\n  tracer\s+none\n  trace_clock\s+[a-z]+\n"
                        r"  children_socket\s+none\n", out), "stat -P recording: %s" % out)
        path = ctl_path(srv.pid)
        check(os.stat(path).st_mode & 0o777 == 0o600, "socket mode %o" % os.stat(path).st_mode)

        def conn():
            return ctl_conn(path)

        req = ctl_req
        s = conn()
        st, t = req(s, 3, b"current_tracer\nfunction")
        check(st == 0, "write current_tracer: %s %s" % (st, t))
        st, t = req(s, 3, b"output\n" + os.path.join(ARGS.work, "c.dat").encode())
        check(st == 0, "write output: %s %s" % (st, t))
        open(os.path.join(ARGS.work, "c.dat"), "w").close()
        st, t = req(s, 4)
        check(st == 0, "start: %s %s" % (st, t))
        st, t = req(s, 2, b"enabled_functions")
        check(st == 0 and re.search(r"^work \(1\)", t, re.M), "enabled_functions:\n%s" % t)
        st, t = req(s, 3, b"current_tracer\nfunction_graph")
        check(st == -16, "a write while recording must be -EBUSY: %s %s" % (st, t))
        st, t = req(s, 5)
        check(st == 0, "stop: %s %s" % (st, t))
        st, t = req(s, 2, b"enabled_functions")
        check(st == 0 and t == "", "enabled after stop:\n%s" % t)
        # garbage: bad magic, truncated, too long a len, unknown op, NUL
        for raw in (b"hello world, not a header", b"\x55\x53\x46\x43\x01\x00",
                    struct.pack("<IHHIiII", 0x43465355, 1, 2, 0, 0, 100, 0) + b"stat",
                    struct.pack("<IHHIiII", 0x43465355, 1, 99, 0, 0, 0, 0),
                    struct.pack("<IHHIiII", 0x43465355, 1, 2, 0, 0, 5, 0) + b"st\0at"):
            g = conn()
            st, t = req(g, 0, raw=raw)
            check(st == -71, "garbage %r: status %s %s" % (raw[:12], st, t))  # -EPROTO
            check(g.recv(100) == b"", "connection kept after garbage")
            g.close()
        st, t = req(s, 1)
        check(st == 0 and "recording=0" in t, "hello after garbage: %s %s" % (st, t))
        check("refused=5" in t, "refused count: %s" % t)
        # another uid: the socket file mode, then SO_PEERCRED with the mode opened
        nobody = 65534
        rc, out, err = usft("stat", "-P", srv.pid, user=nobody)
        check(rc != 0, "uid %d read the stats: %s" % (nobody, out))
        os.chmod(os.path.dirname(path), 0o755)
        os.chmod(path, 0o666)
        probe = ("import socket,struct\n"
                 "s=socket.socket(socket.AF_UNIX,socket.SOCK_SEQPACKET)\n"
                 "s.connect(%r)\n"
                 "# refused at accept: the reply comes before any request\n"
                 "p=s.recv(65536)\n"
                 "print(struct.unpack('<IHHIiII',p[:24])[4], p[24:].decode())\n" % path)
        p = subprocess.run(["setpriv", "--reuid=%d" % nobody, "--regid=%d" % nobody,
                            "--clear-groups", sys.executable, "-c", probe],
                           capture_output=True, timeout=30)
        os.chmod(path, 0o600)
        os.chmod(os.path.dirname(path), 0o700)
        out = p.stdout.decode()
        check(out.startswith("-13 "), "SO_PEERCRED: uid %d got %r %r" % (nobody, out, p.stderr))
        rc, out, err = usft("detach", srv.pid)
        check(rc == 0, "detach (%d): %s" % (rc, err))
        check(not os.path.exists(path), "socket left after detach")
        rc, out, err = usft("stat", "-P", srv.pid)
        check(rc == 10 and "attach first" in err, "stat -P after detach (%d): %s" % (rc, err))
        control_stale_sockets(srv, path)
        check_server_result(srv)
    finally:
        srv.kill()


def control_stale_sockets(srv, path):
    """a socket nobody listens on (its process died, or exec'd) is removed
    by the client that meets it and replaced by the next attach; one that
    another process listens on is never touched; an exec while attached
    takes the process's socket with it"""
    def stale():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.bind(path)    # bound, never listening: connect() is refused
        s.close()
    stale()
    rc, out, err = usft("stat", "-P", srv.pid)
    check(rc == 10 and "attach first" in err, "stat -P, stale socket (%d): %s" % (rc, err))
    check(not os.path.exists(path), "a stale socket was left in place")
    stale()
    rc, out, err = usft("attach", srv.pid)
    check(rc == 0, "attach over a stale socket (%d): %s" % (rc, err))
    rc, out, err = usft("stat", "-P", srv.pid)
    check(rc == 0 and re.search(r"nr_sites\s+[1-9]", out), "stat -P: %s %s" % (out, err))
    rc, out, err = usft("detach", srv.pid)
    check(rc == 0 and not os.path.exists(path), "detach (%d): %s" % (rc, err))
    # another process's live socket at the path: not the tracee's server
    other = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        other.bind(path)
        other.listen(4)
        rc, out, err = usft("stat", "-P", srv.pid)
        check(rc == 10, "stat -P took another process's socket for the tracee's (%d): %s %s"
              % (rc, out, err))
        check(os.path.exists(path), "another process's live socket was removed")
    finally:
        other.close()
        os.unlink(path)
    # exec while attached: the socket goes with the image
    p = subprocess.Popen([tracee("churn")], env=env(), cwd=ARGS.work, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    try:
        check(p.stdout.readline().startswith(b"ready 0"), "tracee-churn did not start")
        sock = os.path.join(os.path.dirname(path), "%d.sock" % p.pid)
        for i in range(10):
            rc, out, err = usft("attach", p.pid)
            if rc == 0:
                break
            check(rc == 9, "attach tracee-churn (%d): %s" % (rc, err))
        check(rc == 0, "tracee-churn: no attach between its execs")
        # it may have exec'd already right after the attach: then it is gone
        line = p.stdout.readline()
        check(line.startswith(b"ready "), "tracee-churn did not exec: %r" % line)
        check(not os.path.exists(sock), "the socket of the image before the exec is left")
        rc, out, err = usft("stat", "-P", p.pid)
        check(rc == 10, "stat -P after the exec (%d): %s" % (rc, err))
    finally:
        if p.poll() is None:
            p.kill()
        p.communicate()


def rss_kb(pid):
    return int(status_field(pid, "VmRSS").split()[0])


def nr_maps(pid):
    return sum(1 for _ in open("/proc/%d/maps" % pid))


CYCLES = 40


def case_cycles():
    """attach, record, detach CYCLES times while tracee-server runs: every
    result right, no EINTR but the documented kind (check_server_result),
    the text identical after each detach, a thread that blocks SIGTRAP
    running a traced function throughout; the memory the process keeps
    (mappings, RSS) reported after 1 and CYCLES."""
    srv = Server()
    try:
        before = read_text(srv.pid)
        figures = {}
        for i in range(1, CYCLES + 1):
            tracer = ("function", "function_graph")[i % 2]
            rc, out, err = usft("record", "-q", "-P", srv.pid, "-p", tracer, "-l", "checksum",
                                "-l", "work", "-l", "blocked_sum", "--duration", "0.01",
                                "-o", "c.dat")
            check(rc == 0, "cycle %d: record -P failed (%d): %s" % (i, rc, err))
            check(srv.alive(), "cycle %d: tracee-server died" % i)
            check(read_text(srv.pid) == before, "cycle %d: text differs after detach" % i)
            if i in (1, CYCLES):
                figures[i] = (nr_maps(srv.pid), rss_kb(srv.pid))
        check(not usft_threads(srv.pid), "usft threads left: %s" % usft_threads(srv.pid))
        # the thread that blocks every signal runs blocked_sum(): each START
        # and STOP changed its site without an INT3 (or that thread's SIGTRAP
        # had killed the process)
        rc, out, err = usft("attach", srv.pid)
        check(rc == 0, "attach after the cycles (%d): %s" % (rc, err))
        rc, out, err = usft("stat", "-P", srv.pid)
        m = re.search(r"nr_notrap_batches\s+(\d+)", out)
        check(rc == 0 and m and int(m.group(1)) >= CYCLES,
              "batches without INT3 while a thread blocks SIGTRAP: %s %s" % (out, err))
        rc, out, err = usft("detach", srv.pid)
        check(rc == 0, "detach after the cycles (%d): %s" % (rc, err))
        print("memory after 1 cycle: %d mappings, %d KiB RSS; after %d: %d mappings, "
              "%d KiB RSS" % (figures[1] + (CYCLES,) + figures[CYCLES]))
        check(figures[CYCLES][0] <= figures[1][0] + 4, "mappings grew: %s" % figures)
        check(figures[CYCLES][1] <= figures[1][1] + 8192,
              "RSS grew by more than 8 MiB: %s" % figures)
        check_server_result(srv)
    finally:
        srv.kill()


def expect(rc, err, code, words, what):
    check(rc == code, "%s: exit status %d, want %d: %s" % (what, rc, code, err))
    for w in words:
        check(w in err, "%s: message does not say %r: %s" % (what, w, err))


def untouched(pid, before=None):
    check(status_field(pid, "TracerPid") == "0", "left traced")
    check(stopped_threads(pid) == 0, "threads left stopped")
    maps = open("/proc/%d/maps" % pid).read()
    check("libusft" not in maps, "the runtime was loaded:\n" + maps)
    if before is not None:
        check(read_text(pid) == before, "text changed")


def case_badcases():
    """each refusal: its message, its exit status, the process untouched"""
    # no such process; a thread id
    rc, out, err = usft("attach", 0x3ffffff0)
    expect(rc, err, 3, ["no process"], "no such process")
    rc, out, err = usft("record", "-P", "12x")
    expect(rc, err, 2, ["not a process id"], "a bad pid")
    srv = Server()
    try:
        before = read_text(srv.pid)
        tid = [int(t) for t in os.listdir("/proc/%d/task" % srv.pid) if int(t) != srv.pid][0]
        rc, out, err = usft("attach", tid)
        expect(rc, err, 3, ["thread of process %d" % srv.pid], "a thread id")
        # another uid
        rc, out, err = usft("attach", srv.pid, user=65534)
        expect(rc, err, 4, ["uid", "run usft as that user or as root"], "another uid")
        untouched(srv.pid, before)
        # already traced: a helper holds it with PTRACE_SEIZE
        holder = subprocess.Popen([sys.executable, "-c",
                                   "import ctypes,sys,time\n"
                                   "l=ctypes.CDLL(None,use_errno=True)\n"
                                   "r=l.ptrace(0x4206,%d,0,0)\n"
                                   "print(r,flush=True)\n"
                                   "time.sleep(30)\n" % srv.pid],
                                  stdout=subprocess.PIPE)
        check(holder.stdout.readline().strip() == b"0", "the helper could not seize")
        rc, out, err = usft("attach", srv.pid)
        expect(rc, err, 8, ["already traced by process %d" % holder.pid], "traced")
        holder.kill()
        holder.wait()
        time.sleep(0.1)
        untouched(srv.pid, before)
        # not attached
        rc, out, err = usft("detach", srv.pid)
        expect(rc, err, 10, ["no usft control socket", "usft attach"], "detach, not attached")
        rc, out, err = usft("stat", "-P", srv.pid)
        expect(rc, err, 10, ["attach first"], "stat -P, not attached")
        untouched(srv.pid, before)
        check_server_result(srv)
    finally:
        srv.kill()
    # no patchable functions: a plain system program
    plain = subprocess.Popen(["sleep", "60"])
    try:
        time.sleep(0.1)
        rc, out, err = usft("record", "-P", plain.pid, "--duration", "0.1", "-o", "n.dat")
        expect(rc, err, 5, ["no patchable functions", "patch flags", "nothing was changed"],
               "no sites")
        untouched(plain.pid)
        check(not os.path.exists(os.path.join(ARGS.work, "n.dat")), "n.dat created")
    finally:
        plain.kill()
        plain.wait()
    # static: no loader to load the runtime with
    st = subprocess.Popen([tracee("static-sleep")])
    try:
        time.sleep(0.1)
        rc, out, err = usft("attach", st.pid)
        expect(rc, err, 7, ["no dynamic loader", "usft record"], "static")
        untouched(st.pid)
    finally:
        st.kill()
        st.wait()
    # another architecture: an i386 program (IA32 emulation), built here
    other_arch()
    # the process exits in the middle: no hang, a clear status
    for delay in (0.0, 0.002, 0.005, 0.01, 0.02):
        srv = Server()
        killer = subprocess.Popen([sys.executable, "-c",
                                   "import os,time,signal\ntime.sleep(%f)\n"
                                   "os.kill(%d, signal.SIGKILL)\n" % (delay, srv.pid)])
        rc, out, err = usft("record", "-q", "-P", srv.pid, "--duration", "0.05", "-o", "x.dat",
                            timeout=30)
        killer.wait()
        srv.p.wait()
        check(rc in (0, 3, 9), "killed at %.3f s: exit status %d: %s" % (delay, rc, err))
        check("Segmentation" not in err and "Traceback" not in err, err)


def other_arch():
    """exit 6 and an untouched target for a program of another ELF machine:
    a static i386 program spinning in _start (gcc -m32 -nostdlib); skipped
    with a message where it cannot be built or run (no IA32 emulation)."""
    exe = os.path.join(ARGS.work, "spin32")
    src = os.path.join(ARGS.work, "spin32.c")
    with open(src, "w") as f:
        f.write("void _start(void) { for (;;) __asm__ volatile(\"pause\"); }\n")
    b = subprocess.run(["cc", "-m32", "-nostdlib", "-static", "-O1", src, "-o", exe],
                       capture_output=True, text=True)
    if b.returncode:
        print("note: other-architecture case skipped: cc -m32 failed: " + b.stderr.strip())
        return
    try:
        p = subprocess.Popen([exe])
    except OSError as e:  # ENOEXEC: a kernel built without IA32 emulation
        print("note: other-architecture case skipped: an i386 program does not run here: %s" % e)
        return
    try:
        time.sleep(0.1)
        if p.poll() is not None:
            print("note: other-architecture case skipped: an i386 program does not run here")
            return
        rc, out, err = usft("record", "-P", p.pid, "--duration", "0.1", "-o", "a.dat")
        expect(rc, err, 6, ["another architecture", "ELF machine 3"], "other arch")
        untouched(p.pid)
        check(not os.path.exists(os.path.join(ARGS.work, "a.dat")), "a.dat created")
    finally:
        p.kill()
        p.wait()


def churn_execs_fast():
    """a new image every 20 ms: most attempts meet an exec between the probe
    and the stop, when the libc the probe saw is gone (a call to its old
    dlopen address killed the process with SIGSEGV); each must record or
    exit 9, and the process must live on (it loads the traced libraries
    meanwhile: once attached each load is a rendezvous of the runtime, which
    the exec* routed to the shim wait for)"""
    p = subprocess.Popen([tracee("churn"), "0", "20"], env=env({"CHURN_EXEC": "mix"}),
                         cwd=ARGS.work,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        check(p.stdout.readline().startswith(b"ready"), "tracee-churn did not start")
        codes = {}
        for i in range(60):
            rc, out, err = usft("record", "-q", "-P", p.pid, "-p", "function", "--duration",
                                "0.01", "-o", "fast.dat")
            codes[rc] = codes.get(rc, 0) + 1
            check(rc in (0, 9), "fast exec, attempt %d: exit status %d: %s" % (i, rc, err))
            check(p.poll() is None, "fast exec, attempt %d: tracee-churn ended (%s); usft "
                  "said: %s" % (i, p.returncode, err))
        print("fast exec: exit statuses %s" % codes)
    finally:
        if p.poll() is None:
            p.kill()
        p.communicate()


def churn_record_execs():
    """the same under `usft record`, where every image runs the runtime: 25
    images of 10 ms, each busy up to its exec while three threads load the
    traced libraries (a rendezvous each); an exec with the rendezvous signal
    pending killed the new image (signal 41, most runs within 25 images).
    The images exec in turn with execl(), syscall(SYS_execve) and an
    execve() found with dlsym() (CHURN_EXEC=mix): the raw one killed 1 of 3
    runs of 25 before the shim wrapped syscall()"""
    rc, out, err = usft("record", "-q", "-p", "function", "-l", "a_*", "-l", "b_*", "-o",
                        "rexec.dat", tracee("churn"), "0", "-10", "25", timeout=240,
                        env=env({"CHURN_EXEC": "mix"}))
    last = (out.strip().splitlines() or [""])[-1]
    check(rc == 0 and re.match(r"ok gen=25 bad=0 ", last),
          "usft record of execs during rendezvous: %d %r %s" % (rc, last, err[-2000:]))


def case_churn():
    """attach while the process forks, execs itself and dlopens in a loop:
    each attempt records or says the process exec'd; its results stay right"""
    churn_record_execs()
    churn_execs_fast()
    p = subprocess.Popen([tracee("churn")], env=env(), cwd=ARGS.work, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    try:
        check(p.stdout.readline().startswith(b"ready"), "tracee-churn did not start")
        ok = 0
        for i in range(8):
            rc, out, err = usft("record", "-q", "-P", p.pid, "-p", "function", "-l",
                                "churn_work", "--duration", "0.1", "-o", "churn%d.dat" % i)
            check(rc in (0, 9), "attempt %d: exit status %d: %s" % (i, rc, err))
            if p.poll() is not None:
                o, e = p.communicate()
                raise Fail("tracee-churn ended (%d): %s %s; usft said: %s"
                           % (p.returncode, o.decode()[-300:], e.decode()[-500:], err))
            if rc == 0 and os.path.exists(os.path.join(ARGS.work, "churn%d.dat" % i)):
                # an exec right after the start may end a recording with no event
                text = report("churn%d.dat" % i)
                ok += "churn_work <-" in text
                check(not re.search(r"\] +[\d.]+: 0x", text),
                      "attempt %d: addresses without names:\n%s" % (i, text[:1000]))
        check(ok > 0, "no attempt recorded anything")
        time.sleep(0.1)
        check(status_field(p.pid, "TracerPid") == "0", "left traced")
        check(stopped_threads(p.pid) == 0, "threads left stopped")
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=30)
        last = out.decode().strip().splitlines()[-1]
        check(p.returncode == 0 and re.match(r"ok gen=\d+ bad=0 children=[1-9]", last),
              "tracee-churn: %d %r %s" % (p.returncode, last, err.decode()))
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()


def case_dlclose():
    """record -P again and again while the process dlopens and dlcloses two
    traced libraries in turn (the second where the first was): their
    functions are traced and named after the right library, and the runtime
    never meets a site that changed under it (the kill switch)"""
    p = subprocess.Popen([tracee("churn"), "0", "0"], env=env(), cwd=ARGS.work,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        check(p.stdout.readline().startswith(b"ready"), "tracee-churn did not start")
        seen = set()
        for i in range(20):
            rc, out, err = usft("record", "-q", "-P", p.pid, "-p", "function", "-l", "a_*",
                                "-l", "b_*", "--duration", "0.05", "-o", "dl%d.dat" % i)
            check(rc == 0, "attempt %d: exit status %d: %s" % (i, rc, err))
            check(p.poll() is None, "attempt %d: tracee-churn ended (%s)" % (i, p.returncode))
            text = report("dl%d.dat" % i)
            calls = set(re.findall(r"(\w+) <-(\w+)", text))
            check(calls <= {("a_entry", "load_call"), ("a_helper", "a_entry"),
                            ("b_entry", "load_call"), ("b_helper", "b_entry")},
                  "attempt %d: calls named after the wrong library: %s" % (i, sorted(calls)))
            check(not re.search(r"\] +[\d.]+: 0x", text),
                  "attempt %d: addresses without names:\n%s" % (i, text[:1000]))
            seen |= calls
        check(("a_helper", "a_entry") in seen and ("b_helper", "b_entry") in seen,
              "the libraries' functions were never traced: %s" % sorted(seen))
        rc, out, err = usft("attach", p.pid)
        check(rc == 0, "attach (%d): %s" % (rc, err))
        rc, out, err = usft("stat", "-P", p.pid)
        check(rc == 0 and re.search(r"state\s+ok", out), "runtime state: %s %s" % (out, err))
        rc, out, err = usft("detach", p.pid)
        check(rc == 0, "detach (%d): %s" % (rc, err))
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=30)
        last = out.decode().strip().splitlines()[-1]
        check(p.returncode == 0 and re.match(r"ok gen=0 bad=0 children=\d+ loads=[1-9]", last),
              "tracee-churn: %d %r %s" % (p.returncode, last, err.decode()[-2000:]))
        check("blocks SIGTRAP" not in err.decode(), "warnings: %s" % err.decode()[-2000:])
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()


ROUTED = {"dlopen", "dlclose", "dlsym", "syscall", "execve", "execv", "execvp", "execvpe",
          "fexecve", "execveat", "execl", "execlp", "execle"}


def got_slots(exe):
    """the GOT entries of @exe's dynamic relocations for the names usft
    routes while attached (docs/attach.md): [(offset, name)], from readelf"""
    out = subprocess.run(["readelf", "-rW", exe], capture_output=True, text=True).stdout
    slots = []
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 5 and re.match(r"^[0-9a-f]{8,}$", f[0]) and \
                f[4].split("@")[0] in ROUTED:
            slots.append((int(f[0], 16), f[4].split("@")[0]))
    return slots


def read_got(pid, exe, slots):
    real = os.path.realpath(exe)
    base = None
    for line in open("/proc/%d/maps" % pid):
        f = line.split()
        if len(f) >= 6 and f[5] == real and int(f[2], 16) == 0:
            base = int(f[0].split("-")[0], 16)
            break
    check(base is not None, "no mapping of %s" % real)
    with open("/proc/%d/mem" % pid, "rb") as m:
        out = {}
        for off, name in slots:
            m.seek(base + off)
            out[name] = m.read(8)
        return out


def case_late():
    """objects loaded after the attach through dlopen()/dlclose() pointers
    taken with dlsym() before it (paths usft does not route): a recording
    that runs meanwhile traces the new library's functions (the writer's
    pick-up, filters applied) and its unload through the other pointer does
    not upset the runtime; a direct dlopen() while attached is routed; after
    the detach the text and the routed GOT entries are as before"""
    exe = tracee("late")
    p = subprocess.Popen([exe], env=env(), cwd=ARGS.work, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def cmd(c):
        p.stdin.write(c + "\n")
        p.stdin.flush()
        return p.stdout.readline().strip()
    rec = None
    try:
        check(p.stdout.readline().startswith("ready"), "tracee-late did not start")
        slots = got_slots(exe)
        check({"dlopen", "dlclose", "dlsym"} <= {n for _, n in slots},
              "tracee-late has no GOT entries for dlopen/dlclose/dlsym: %s" % slots)
        got0, text0 = read_got(p.pid, exe, slots), read_text(p.pid)
        rec = subprocess.Popen([ARGS.usft, "record", "-P", str(p.pid), "-p", "function", "-l",
                                "b_*", "-l", "a_*", "-o", "late.dat"], env=env(),
                               cwd=ARGS.work, stderr=subprocess.PIPE, text=True)
        # event-driven: its "recording process" line comes after the START
        line = rec.stderr.readline()
        check("recording process" in line, "record -P did not start: %r" % line)
        routed = read_got(p.pid, exe, slots)
        check(routed != got0, "no GOT entry routed while attached: %s" % routed)
        check(cmd("u") == "u ok", "unrouted dlopen: wrong results")
        check(cmd("r") == "r ok", "routed dlopen: wrong results")
        check(cmd("c") == "c ok", "unrouted dlclose failed")
        rec.send_signal(signal.SIGINT)
        err = rec.stderr.read()
        check(rec.wait(timeout=60) == 0, "record -P failed (%d): %s" % (rec.returncode, err))
        text = report("late.dat")
        calls = set(re.findall(r"(\w+) <-(\w+)", text))
        check(("b_helper", "b_entry") in calls,
              "the library loaded through dlsym()'s dlopen was not traced: %s\n%s"
              % (sorted(calls), text[:2000]))
        check(("a_helper", "a_entry") in calls, "the routed dlopen's library was not traced: %s"
              % sorted(calls))
        check(not re.search(r"\] +[\d.]+: 0x", text), "addresses without names:\n%s" % text[:1000])
        check(read_got(p.pid, exe, slots) == got0, "GOT entries differ after the detach: %s, "
              "before %s" % (read_got(p.pid, exe, slots), got0))
        check(read_text(p.pid) == text0, "text differs after the detach")
        check(not usft_threads(p.pid), "usft threads left: %s" % usft_threads(p.pid))
        # attached again, and the unrouted library loaded again meanwhile
        check(cmd("u") == "u ok", "unrouted dlopen after the detach: wrong results")
        rc, out, err = usft("record", "-q", "-P", p.pid, "-p", "function", "-l", "b_*",
                            "--duration", "0.05", "-o", "late2.dat")
        check(rc == 0, "record -P again (%d): %s" % (rc, err))
        check(cmd("c") == "c ok", "unrouted dlclose failed")
        rc, out, err = usft("record", "-q", "-P", p.pid, "-p", "function", "--duration", "0.05",
                            "-o", "late3.dat")
        check(rc == 0, "record -P after an unrouted dlclose (%d): %s" % (rc, err))
        rc, out, err = usft("attach", p.pid)
        check(rc == 0, "attach (%d): %s" % (rc, err))
        rc, out, err = usft("stat", "-P", p.pid)
        check(rc == 0 and re.search(r"state\s+ok", out), "runtime state: %s %s" % (out, err))
        rc, out, err = usft("detach", p.pid)
        check(rc == 0, "detach (%d): %s" % (rc, err))
        check(read_got(p.pid, exe, slots) == got0, "GOT entries differ after the last detach")
        out, err = p.communicate("q\n", timeout=30)
        check(p.returncode == 0 and "ok bad=0" in out, "tracee-late: %d %r %s"
              % (p.returncode, out, err[-2000:]))
    finally:
        for x in (rec, p):
            if x and x.poll() is None:
                x.kill()
                x.communicate()


CASES = {n[5:]: f for n, f in globals().items() if n.startswith("case_")}


def main():
    return harness.main(CASES, "attach_", timeout=60)


if __name__ == "__main__":
    sys.exit(main())
