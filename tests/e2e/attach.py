#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of `usft record -P`, `usft attach/detach/stat -P` and the
control socket (docs/attach.md), on samples/tracee/server.c and friends.

attach.py CASE --usft PATH --tracees DIR --work DIR
Each case starts its own tracee, checks what it asks, and leaves no process
behind.  Never asserts a time.
"""
import argparse
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import time

ARGS = None


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def env():
    e = {k: v for k, v in os.environ.items() if not k.startswith("USFT_") and k != "LD_PRELOAD"}
    return e


def usft(*args, timeout=60, user=None):
    cmd = [ARGS.usft] + [str(a) for a in args]
    if user:
        cmd = ["setpriv", "--reuid=%d" % user, "--regid=%d" % user, "--clear-groups"] + cmd
    p = subprocess.run(cmd, env=env(), cwd=ARGS.work, capture_output=True, timeout=timeout)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def tracee(name):
    return os.path.join(ARGS.tracees, "tracee-" + name)


class Server:
    """tracee-server in the background; stop() checks its results."""

    def __init__(self, workers=3, prog="server", args=()):
        self.p = subprocess.Popen([tracee(prog)] + ([str(workers)] if prog == "server" else [])
                                  + list(args), env=env(), cwd=ARGS.work,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if prog == "server":
            line = self.p.stdout.readline().decode()
            check(line.startswith("ready"), "tracee-server did not start: %r" % line)
        self.pid = self.p.pid

    def alive(self):
        return self.p.poll() is None

    def stop(self):
        if self.alive():
            self.p.send_signal(signal.SIGTERM)
        out, err = self.p.communicate(timeout=30)
        return self.p.returncode, out.decode(), err.decode()

    def kill(self):
        if self.alive():
            self.p.kill()
            self.p.communicate(timeout=30)


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
    rc, out, err = srv.stop()
    check(rc == 0, "tracee-server failed (%d): %s %s" % (rc, out, err))
    m = re.search(r"rounds=(\d+) bad=0 eintr_poll=0 eintr_sleep=0 eintr_accept=0", out)
    check(m and int(m.group(1)) > 0, "tracee-server results: %r" % out)


# ---- cases ------------------------------------------------------------------

def case_record():
    """record -P: a call tree; detach: text identical, threads gone."""
    srv = Server()
    try:
        before = read_text(srv.pid)
        rc, out, err = usft("record", "-P", srv.pid, "-p", "function_graph", "-l", "work",
                            "-l", "checksum", "--duration", "0.1", "-o", "g.dat")
        check(rc == 0, "record -P failed (%d): %s" % (rc, err))
        check(re.search(r"usft: \d+ events", err), "no summary: " + err)
        text = report("g.dat")
        check("work() {" in text and "checksum();" in text, "no call tree:\n" + text[:2000])
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
        path = "/run/usft/%d.sock" % srv.pid
        if not os.path.exists(path):
            path = [os.path.join(d, "%d.sock" % srv.pid) for d in
                    ("%s/usft" % os.environ.get("XDG_RUNTIME_DIR", "/nonexistent"),
                     "/tmp/usft-%d" % os.getuid()) if os.path.exists(os.path.join(d, "%d.sock" % srv.pid))][0]
        check(os.stat(path).st_mode & 0o777 == 0o600, "socket mode %o" % os.stat(path).st_mode)

        def conn():
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.settimeout(5)
            s.connect(path)
            return s

        def req(s, op, text=b"", raw=None):
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
        check_server_result(srv)
    finally:
        srv.kill()


CASES = {n[5:]: f for n, f in globals().items() if n.startswith("case_")}


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=sorted(CASES))
    ap.add_argument("--usft", required=True)
    ap.add_argument("--tracees", required=True)
    ap.add_argument("--work", required=True)
    ARGS = ap.parse_args()
    os.makedirs(ARGS.work, exist_ok=True)
    try:
        CASES[ARGS.case]()
    except Fail as e:
        print("FAIL attach_%s: %s" % (ARGS.case, e))
        return 1
    print("ok attach_%s" % ARGS.case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
