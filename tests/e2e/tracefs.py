#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of `usft mount PID DIR`, the tracefs of a traced process
(docs/tracefs.md), on samples/tracee/server.c.

tracefs.py CASE --usft PATH --tracees DIR --work DIR [--toykernel PATH]
  files        each file's read format, write semantics (> replaces, >> adds,
               !glob removes), the errno of each bad write, and that a refused
               write leaves the file and the program text as they were
  pipe         trace_pipe consumes, blocks, polls; trace_marker; O_TRUNC of trace;
               a reader that closes after a few bytes loses nothing;
               readers killed while blocked in read cost the server nothing;
               two readers get distinct events, small reads lose nothing,
               function lines in the kernel's format, writes over 64 KiB
  instances    mkdir/rmdir instances/NAME: own tracer, filter and buffer
  concurrency  two writers of filters while a reader consumes trace_pipe and
               the tracee's threads run: every state read is one a write made
  death        the target exits: ENODEV, then unmounted; kill -9 of the
               server: unmounted (auto_unmount), nothing left in D state
  mod          ':mod:' filters for an object not loaded yet are cached (read
               back, the notrace side, an instance, '!' and '>' drop them),
               select nothing meanwhile, and apply when dlopen() loads it
  unload       dlclose() clears the object's functions from every filter
               (instances, no tracer running, graph and stack filters), so the
               object loaded again at the same address is not selected
  automount    record --mount, record -P --mount, attach --mount: mounted
               once the runtime answers, unmounted when the recording ends
               or on detach (which leaves no tracer registered)
Needs root and /dev/fuse (exit 77, skipped, otherwise).  Never asserts a time:
waits have generous limits and only fail when a thing never happens.
"""
import errno
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import ARGS, Fail, Server, check, env, mounted, wait_for  # noqa: E402,F401


class Tracee(Server):
    """tracee-server, two workers unless told"""

    def __init__(self, workers=2):
        super().__init__(workers)


class Mount:
    def __init__(self, pid, name="m"):
        self.dir = os.path.join(ARGS.work, name)
        if mounted(self.dir):
            subprocess.run(["fusermount3", "-u", "-z", self.dir])
        os.makedirs(self.dir, exist_ok=True)
        p = subprocess.run([ARGS.usft, "mount", str(pid), self.dir], env=env(),
                           capture_output=True, timeout=60)
        check(p.returncode == 0, "usft mount: %d %s" % (p.returncode, p.stderr.decode()))
        check(mounted(self.dir), "not in /proc/mounts after usft mount")
        with open("/proc/mounts") as f:
            line = [l for l in f if " %s " % self.dir in l][0]
        check(line.startswith("tracefs "), "fsname is not tracefs: %s" % line)

    def path(self, name):
        return os.path.join(self.dir, name)

    def read(self, name):
        with open(self.path(name)) as f:
            return f.read()

    def write(self, name, text, append=False):
        """one write(2) of text; Return: 0 or the errno"""
        flags = os.O_WRONLY | (os.O_APPEND if append else os.O_TRUNC)
        try:
            fd = os.open(self.path(name), flags)
        except OSError as e:
            return e.errno
        try:
            os.write(fd, text.encode())
            return 0
        except OSError as e:
            return e.errno
        finally:
            os.close(fd)

    def ok(self, name, text, append=False):
        r = self.write(name, text, append)
        check(r == 0, "write %r to %s: %s" % (text, name, os.strerror(r)))

    def bad(self, name, text, want, append=False):
        r = self.write(name, text, append)
        check(r == want, "write %r to %s: want %s, got %s" %
              (text, name, errno.errorcode.get(want), errno.errorcode.get(r, r)))

    def umount(self):
        if mounted(self.dir):
            subprocess.run(["fusermount3", "-u", "-z", self.dir])
        wait_for(lambda: not mounted(self.dir), "unmounted after fusermount3 -u")


def site_text(pid, m):
    """the bytes at every site (available_filter_functions_addrs)"""
    out = []
    with open("/proc/%d/mem" % pid, "rb") as mem:
        for line in m.read("available_filter_functions_addrs").splitlines():
            addr = int(line.split()[0], 16)
            mem.seek(addr)
            out.append(mem.read(5))
    return out


def lines(text):
    return [l for l in text.splitlines() if l and not l.startswith("#")]


def func_lines(m):
    return [l for l in lines(m.read("trace")) if "<-" in l]


# ---- cases -------------------------------------------------------------------

def case_files():
    t = Tracee()
    m = Mount(t.pid)
    try:
        # read formats
        check(m.read("current_tracer") == "nop\n", "current_tracer starts nop")
        check(m.read("available_tracers").split() == ["function_graph", "function", "nop"],
              "available_tracers")
        check(m.read("tracing_on") == "1\n", "tracing_on starts 1")
        avail = m.read("available_filter_functions").splitlines()
        check("mix" in avail and "checksum" in avail, "available_filter_functions names")
        addrs = m.read("available_filter_functions_addrs").splitlines()
        check(len(addrs) == len(avail), "one address line per function")
        for a, n in zip(addrs, avail):
            h, name = a.split(" ", 1)
            int(h, 16)
            check(name == n, "addrs line %r vs %r" % (a, n))
        check(m.read("set_ftrace_filter") == "#### all functions enabled ####\n",
              "empty filter reads as all functions")
        check(m.read("set_ftrace_notrace") == "#### no functions disabled ####\n",
              "empty notrace reads as none disabled")
        check(m.read("set_ftrace_pid") == "no pid\n", "set_ftrace_pid empty")
        check("[local]" in m.read("trace_clock"), "trace_clock marks local")
        check(m.read("buffer_size_kb").strip().isdigit(), "buffer_size_kb a number")
        int(m.read("tracing_cpumask"), 16)
        check("print-parent" in m.read("trace_options").split(), "trace_options")
        check(m.read("options/funcgraph-tail") == "0\n", "options/funcgraph-tail")
        check(m.read("README").startswith("tracing mini-HOWTO"), "README")
        check(m.read("trace").startswith("# tracer: nop\n"), "trace header")
        check(m.read("enabled_functions") == "", "nothing enabled yet")
        check(os.path.isdir(m.path("events")) and os.path.isdir(m.path("instances")),
              "events/ and instances/")

        text0 = site_text(t.pid, m)
        # write semantics: > replaces, >> adds, !glob removes, whitespace lists
        m.ok("set_ftrace_filter", "mix checksum\n")
        check(m.read("set_ftrace_filter").split() == ["mix", "checksum"] or
              sorted(m.read("set_ftrace_filter").split()) == ["checksum", "mix"], "two functions")
        m.ok("set_ftrace_filter", "mix\n")
        check(m.read("set_ftrace_filter").split() == ["mix"], "> replaces")
        m.ok("set_ftrace_filter", "checksum\n", append=True)
        check(sorted(m.read("set_ftrace_filter").split()) == ["checksum", "mix"], ">> adds")
        m.ok("set_ftrace_filter", "!mix\n", append=True)
        check(m.read("set_ftrace_filter").split() == ["checksum"], "!glob removes")
        check(site_text(t.pid, m) == text0, "filter writes without a tracer change no text")

        # every refused write: its errno, and nothing changed
        before = (m.read("set_ftrace_filter"), m.read("current_tracer"), m.read("tracing_on"),
                  m.read("buffer_size_kb"), m.read("trace_clock"), m.read("set_ftrace_pid"),
                  m.read("options/sym-offset"), m.read("enabled_functions"))
        m.bad("set_ftrace_filter", "no_such_function_anywhere\n", errno.EINVAL)
        m.bad("set_ftrace_filter", "no_such_function_anywhere\n", errno.EINVAL, append=True)
        m.bad("set_ftrace_notrace", "no_such*_either\n", errno.EINVAL)
        m.bad("current_tracer", "blk\n", errno.EINVAL)
        m.bad("tracing_on", "on\n", errno.EINVAL)
        m.bad("buffer_size_kb", "0\n", errno.EINVAL)
        m.bad("buffer_size_kb", "-5\n", errno.EINVAL)
        m.bad("trace_clock", "jiffies\n", errno.EINVAL)
        m.bad("set_ftrace_pid", "abc\n", errno.EINVAL)
        m.bad("options/sym-offset", "2\n", errno.EINVAL)
        m.bad("trace_options", "no_such_option\n", errno.EINVAL)
        m.bad("tracing_cpumask", "xyz\n", errno.EINVAL)
        m.bad("max_graph_depth", "deep\n", errno.EINVAL)
        m.bad("set_event", "sched:sched_switch\n", errno.EINVAL)
        m.bad("available_tracers", "x\n", errno.EACCES)
        after = (m.read("set_ftrace_filter"), m.read("current_tracer"), m.read("tracing_on"),
                 m.read("buffer_size_kb"), m.read("trace_clock"), m.read("set_ftrace_pid"),
                 m.read("options/sym-offset"), m.read("enabled_functions"))
        check(before == after, "a refused write changed state: %r -> %r" % (before, after))
        check(site_text(t.pid, m) == text0, "a refused write changed program text")

        # the function tracer, live filter updates
        m.ok("current_tracer", "function\n")
        check(m.read("current_tracer") == "function\n", "current_tracer reads back")
        en = m.read("enabled_functions")
        check(en.startswith("checksum (1)"), "enabled_functions: %r" % en)
        check(m.read("touched_functions").startswith("checksum (1)"), "touched_functions")
        wait_for(lambda: func_lines(m), "function events in trace")
        check(all(" checksum <-" in l for l in func_lines(m)), "only checksum traced")
        text1 = site_text(t.pid, m)
        m.bad("set_ftrace_filter", "no_such_function_anywhere\n", errno.EINVAL)
        check(site_text(t.pid, m) == text1, "refused write while tracing changed text")
        check(m.read("enabled_functions") == en, "refused write while tracing changed sites")
        m.ok("set_ftrace_filter", "mix\n")
        m.ok("trace", "")
        wait_for(lambda: func_lines(m), "mix events after the filter changed")
        check(all(" mix <-checksum" in l for l in func_lines(m)), "mix <-checksum after >")
        m.ok("options/print-parent", "0\n")
        wait_for(lambda: func_lines(m) == [] and lines(m.read("trace")), "no parent column")
        m.ok("options/print-parent", "1\n")
        m.ok("tracing_on", "0\n")
        # a callback already past the tracing_on test still commits its event,
        # as in the kernel (ring_buffer_record_off() waits for no writer):
        # let those finish before the buffer is cleared and checked (on a
        # loaded machine one may be preempted there: clear and look again)
        time.sleep(0.05)

        def settled():
            m.ok("trace", "")
            time.sleep(0.05)
            return lines(m.read("trace")) == []
        wait_for(settled, "tracing_on 0 records nothing")
        m.ok("tracing_on", "1\n")

        # function_graph
        m.ok("current_tracer", "function_graph\n")
        m.ok("set_ftrace_filter", "checksum mix\n")
        wait_for(lambda: any("mix();" in l for l in lines(m.read("trace"))), "graph leaf mix();")
        g = lines(m.read("trace"))
        check(any("checksum() {" in l for l in g), "graph: checksum() {")
        m.ok("options/funcgraph-tail", "1\n")
        wait_for(lambda: any("} /* checksum */" in l for l in lines(m.read("trace"))),
                 "funcgraph-tail")
        m.ok("current_tracer", "nop\n")
        m.ok("set_ftrace_filter", "\n")
        check(m.read("enabled_functions") == "", "nop: nothing enabled")
        check(site_text(t.pid, m) == text0, "nop: text back as before")
    finally:
        m.umount()
    t.finish()


def case_pipe():
    t = Tracee()
    m = Mount(t.pid)
    try:
        m.ok("trace_marker", "test input 1\n")
        check("tracing_mark_write: test input 1" in m.read("trace"), "marker in trace")
        check("test input 1" in m.read("trace"), "trace does not consume")
        fd = os.open(m.path("trace_pipe"), os.O_RDONLY | os.O_NONBLOCK)
        data = os.read(fd, 65536).decode()
        check("test input 1" in data, "trace_pipe gives the marker")
        check("test input 1" not in m.read("trace"), "trace_pipe consumed it")
        try:
            os.read(fd, 65536)
            raise Fail("empty non-blocking trace_pipe read did not say EAGAIN")
        except BlockingIOError:
            pass
        os.close(fd)
        # blocking read + poll: a writer wakes the reader
        fd = os.open(m.path("trace_pipe"), os.O_RDONLY)
        p = select.poll()
        p.register(fd, select.POLLIN)
        check(p.poll(0) == [], "poll: nothing yet")
        got = []
        th = threading.Thread(target=lambda: got.append(os.read(fd, 65536).decode()))
        th.start()
        time.sleep(0.1)
        check(th.is_alive(), "a blocking trace_pipe read returned with no data")
        m.ok("trace_marker", "wake up\n")
        th.join(30)
        check(not th.is_alive() and "wake up" in got[0], "blocking read woken: %r" % got)
        m.ok("trace_marker", "for poll\n")
        check(p.poll(30000) != [], "poll: POLLIN once there is data")
        os.close(fd)
        # O_TRUNC of trace clears it
        m.ok("trace_marker", "to be cleared\n")
        fd = os.open(m.path("trace"), os.O_WRONLY | os.O_TRUNC)
        os.close(fd)
        check("to be cleared" not in m.read("trace"), "O_TRUNC clears trace")
        # snapshot
        m.ok("trace_marker", "snap me\n")
        m.ok("snapshot", "1\n")
        s = m.read("snapshot")
        check("Snapshot is allocated" in s and "snap me" in s, "snapshot holds the buffer")
        m.ok("snapshot", "0\n")
        check("Snapshot is freed" in m.read("snapshot"), "snapshot freed")
        # function events through the pipe
        m.ok("set_ftrace_filter", "mix\n")
        m.ok("current_tracer", "function\n")
        fd = os.open(m.path("trace_pipe"), os.O_RDONLY)
        data = os.read(fd, 65536).decode()
        os.close(fd)
        check(" mix <-checksum" in data, "function lines through trace_pipe")
        func_format(data)
        # a full read has the next one's text made ahead: an option written
        # in between still applies to it (formatted at read time, as the kernel)
        time.sleep(0.2)
        fd = os.open(m.path("trace_pipe"), os.O_RDONLY)
        os.read(fd, 65536)
        m.ok("options/print-parent", "0\n")
        data = os.read(fd, 65536).decode()
        os.close(fd)
        m.ok("options/print-parent", "1\n")
        check(" mix\n" in data and "<-" not in data, "print-parent 0 after a full read: %r"
              % data[:300])
        m.ok("current_tracer", "nop\n")
        pipe_readers(m)
        # set_ftrace_filter commands (function probes) and their read-back
        m.ok("set_ftrace_filter", "mix:traceoff\n")
        f = m.read("set_ftrace_filter").splitlines()
        check(f == ["#### all functions enabled ####", "mix:traceoff:unlimited"],
              "probe read-back: %r" % f)
        wait_for(lambda: m.read("tracing_on") == "0\n", "mix:traceoff turned tracing off")
        m.bad("set_ftrace_filter", "!no_such_fn:traceoff\n", errno.EINVAL, append=True)
        m.ok("set_ftrace_filter", "!mix:traceoff\n", append=True)
        check(m.read("set_ftrace_filter") == "#### all functions enabled ####\n", "probe removed")
        m.ok("tracing_on", "1\n")
        # function_profile_enabled and trace_stat/functionN
        m.ok("set_ftrace_filter", "mix\n")
        m.ok("function_profile_enabled", "1\n")
        stats = lambda: "".join(m.read("trace_stat/" + n) for n in os.listdir(m.path("trace_stat")))
        wait_for(lambda: " mix " in stats(), "mix in trace_stat/function*")
        m.ok("function_profile_enabled", "0\n")
        s1 = stats()
        time.sleep(0.05)
        check(stats() == s1, "trace_stat changed after the profiler was disabled")
        m.ok("set_ftrace_filter", "\n")
        readers_killed(m)
    finally:
        m.umount()
    t.finish()


FUNC_LINE = re.compile(r"^(.{16})-(\d+) *\[(\d{3})\] \.\.\.\.\. +(\d+)\.(\d{6}): (\S+) <-(\S+)$")


def func_format(data):
    """each function line is the kernel's "%16s-%-7d [%03d] ..... %5lu.%06lu: %ps <-%ps"""
    got = [l for l in data.splitlines() if "<-" in l]
    check(got, "no function lines in %r" % data[:200])
    for l in got:
        f = FUNC_LINE.match(l)
        check(f, "function line not in the kernel's format: %r" % l)
        comm, tid, cpu, sec, usec, fn, parent = f.groups()
        want = "%16s-%-7d [%03d] ..... %5d.%06d: %s <-%s" % (
            comm.strip(), int(tid), int(cpu), int(sec), int(usec), fn, parent)
        check(l == want, "function line %r, the kernel's format gives %r" % (l, want))


def drain(fd, size=65536):
    """everything a non-blocking trace_pipe fd has, @size bytes a read"""
    out = b""
    try:
        while True:
            d = os.read(fd, size)
            if not d:
                break
            out += d
    except BlockingIOError:
        pass
    return out.decode()


def closed_reader(m):
    """a reader that closes after a few bytes loses nothing: what the process
    gave for its read and it did not take goes to the next reader, and
    `> trace` drops it with the buffer"""
    drain_fd = os.open(m.path("trace_pipe"), os.O_RDONLY | os.O_NONBLOCK)
    drain(drain_fd)
    os.close(drain_fd)
    sent = ["closed reader %02d %s" % (i, "x" * 100) for i in range(50)]
    for text in sent:
        m.ok("trace_marker", text + "\n")
    # GNU head -c N reads N bytes: the rest of the process's reply stays unread
    head = subprocess.run(["head", "-c", "100", m.path("trace_pipe")], capture_output=True,
                          timeout=60)
    check(head.returncode == 0 and len(head.stdout) == 100, "head -c 100: %r" % (head,))
    fd = os.open(m.path("trace_pipe"), os.O_RDONLY | os.O_NONBLOCK)
    p = select.poll()
    p.register(fd, select.POLLIN)
    check(p.poll(0) != [], "poll: the text a closed reader left is ready")
    rest = drain(fd)
    os.close(fd)
    text = head.stdout.decode() + rest
    got = [l.split("tracing_mark_write: ", 1)[1] for l in text.splitlines()
           if "tracing_mark_write: " in l]
    check(got == sent, "every event once, in order, after a reader closed: %d of %d, %r"
          % (len(got), len(sent), text[:300]))
    # what is left after a close goes with the buffer
    m.ok("trace_marker", "left then cleared %s\n" % ("y" * 100))
    m.ok("trace_marker", "second left then cleared\n")
    head = subprocess.run(["head", "-c", "10", m.path("trace_pipe")], capture_output=True,
                          timeout=60)
    check(head.returncode == 0 and len(head.stdout) == 10, "head -c 10: %r" % (head,))
    os.close(os.open(m.path("trace"), os.O_WRONLY | os.O_TRUNC))
    fd = os.open(m.path("trace_pipe"), os.O_RDONLY | os.O_NONBLOCK)
    rest = drain(fd)
    os.close(fd)
    check("cleared" not in rest, "> trace kept a closed reader's text: %r" % rest[:300])


def pipe_readers(m):
    """two readers each get distinct events (together all of them); reads
    smaller than a line lose nothing; writes longer than a control request"""
    a = os.open(m.path("trace_pipe"), os.O_RDONLY | os.O_NONBLOCK)
    b = os.open(m.path("trace_pipe"), os.O_RDONLY | os.O_NONBLOCK)
    try:
        drain(a)
        sent = ["two readers %d" % i for i in range(40)]
        got_a, got_b = [], []
        for i, text in enumerate(sent):
            m.ok("trace_marker", text + "\n")
            if i % 7 == 3:
                got_a.append(drain(a, 200))
            elif i % 7 == 6:
                got_b.append(drain(b))
        got_a.append(drain(a, 200))
        got_b.append(drain(b))
        marks = lambda chunks: [l.split("tracing_mark_write: ", 1)[1]
                                for l in "".join(chunks).splitlines() if "tracing_mark_write: " in l]
        ma, mb = marks(got_a), marks(got_b)
        check(ma and mb, "both readers got events: %d and %d" % (len(ma), len(mb)))
        check(not set(ma) & set(mb), "an event reached both readers: %r" % (set(ma) & set(mb)))
        check(sorted(ma + mb) == sorted(sent), "the two readers lost or doubled events: "
              "%d + %d of %d" % (len(ma), len(mb), len(sent)))
        # a read smaller than the line: the rest of it comes with the next reads
        m.ok("trace_marker", "a line read 7 bytes at a time\n")
        text = drain(a, 7)
        check(text.endswith("tracing_mark_write: a line read 7 bytes at a time\n"),
              "7-byte reads: %r" % text)
    finally:
        os.close(a)
        os.close(b)
    closed_reader(m)
    # more readers than the process serves connections (64): the rest share
    # the mount's own, and each marker still reaches exactly one of them
    fds = [os.open(m.path("trace_pipe"), os.O_RDONLY | os.O_NONBLOCK) for _ in range(66)]
    try:
        for fd in fds:
            drain(fd)
        m.ok("trace_marker", "one of sixty-six\n")
        got = "".join(drain(fd) for fd in fds)
        check(got.count("one of sixty-six") == 1, "66 readers: %r" % got[:300])
    finally:
        for fd in fds:
            os.close(fd)
    check(m.read("current_tracer") == "nop\n", "the mount answers after 66 readers")
    # a write larger than one control request (64 KiB) is cut between words
    m.ok("set_ftrace_filter", "mix" + " " * 100000 + "checksum\n")
    check(sorted(m.read("set_ftrace_filter").split()) == ["checksum", "mix"],
          "a 100 KiB filter write: %r" % m.read("set_ftrace_filter")[:200])
    m.ok("set_ftrace_filter", "\n")
    m.ok("trace_marker", "x" * 100000 + "\n")
    check(m.read("current_tracer") == "nop\n", "the mount answers after a 100 KB marker")


def blocked_in_fuse(pid):
    """@pid waits for a FUSE reply (or its wait channel is hidden: say yes)"""
    try:
        w = open("/proc/%d/wchan" % pid).read().strip()
    except OSError:
        return True
    return w in ("request_wait_answer", "0", "")


def readers_killed(m):
    """a `cat trace_pipe` blocked in read and killed (^C, SIGTERM, kill -9):
    the interrupt costs the server nothing, the next reader gets its data"""
    server = server_pid(m.dir)
    fd = os.open(m.path("trace_pipe"), os.O_RDONLY | os.O_NONBLOCK)
    try:
        while os.read(fd, 65536):
            pass
    except BlockingIOError:
        pass
    os.close(fd)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        r = subprocess.Popen(["cat", m.path("trace_pipe")], stdout=subprocess.DEVNULL,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        wait_for(lambda: blocked_in_fuse(r.pid), "cat blocked in its trace_pipe read")
        time.sleep(0.05)
        r.send_signal(sig)
        r.wait(30)
        check(r.returncode == -sig, "cat ended by %s: %s" % (sig, r.returncode))
        check(server is None or not gone(server), "the server died with a reader (%s)" % sig)
        check(m.read("current_tracer") == "nop\n", "the mount answers after a reader's %s" % sig)
    m.ok("trace_marker", "after the readers\n")
    fd = os.open(m.path("trace_pipe"), os.O_RDONLY | os.O_NONBLOCK)
    data = os.read(fd, 65536).decode()
    os.close(fd)
    check("after the readers" in data, "the next reader gets its data: %r" % data)


def case_instances():
    t = Tracee()
    m = Mount(t.pid)
    try:
        os.mkdir(m.path("instances/foo"))
        check(os.listdir(m.path("instances")) == ["foo"], "instances lists foo")
        try:
            os.mkdir(m.path("instances/foo"))
            raise Fail("second mkdir of foo worked")
        except FileExistsError:
            pass
        try:
            os.mkdir(m.path("options/x"))
            raise Fail("mkdir outside instances worked")
        except PermissionError:
            pass
        i = "instances/foo/"
        check(not os.path.exists(m.path(i + "available_filter_functions")),
              "top-only file in an instance")
        m.ok(i + "set_ftrace_filter", "checksum\n")
        m.ok("set_ftrace_filter", "mix\n")
        m.ok(i + "current_tracer", "function\n")
        m.ok("current_tracer", "function\n")
        wait_for(lambda: func_lines(m) and [l for l in lines(m.read(i + "trace")) if "<-" in l],
                 "events in both buffers")
        check(all(" mix <-" in l for l in func_lines(m)), "top: only mix")
        check(all(" checksum <-" in l for l in lines(m.read(i + "trace")) if "<-" in l),
              "instance: only checksum")
        check(m.read(i + "set_ftrace_filter").split() == ["checksum"], "instance filter")
        m.ok(i + "current_tracer", "nop\n")
        os.rmdir(m.path("instances/foo"))
        check(os.listdir(m.path("instances")) == [], "rmdir removed foo")
        m.ok("current_tracer", "nop\n")
        check(m.read("enabled_functions") == "", "nothing enabled at the end")
    finally:
        m.umount()
    t.finish()


def stack_after(text, func):
    """the frames of the first <stack trace> whose first frame is func"""
    ls = text.splitlines()
    for i, l in enumerate(ls):
        if l.endswith("<stack trace>") and i + 1 < len(ls) and \
                ls[i + 1].startswith(" => " + func):
            out = []
            for f in ls[i + 1:]:
                if not f.startswith(" => "):
                    break
                out.append(f[4:].split("+")[0])
            return out
    return None


def case_stack():
    """stack traces: the stacktrace command's entries hold the stack (the
    probed function, then its callers), options/func_stack_trace adds one
    after each function event, and the stack tracer's files (stack_trace,
    stack_max_size, stack_trace_filter, stack_tracer_enabled)."""
    t = Tracee()
    m = Mount(t.pid)
    try:
        st = m.read("stack_trace")
        check(st.startswith("        Depth    Size   Location    (0 entries)\n") and
              "Stack tracer disabled" in st, "stack_trace before: %r" % st)
        check(m.read("stack_tracer_enabled") == "0\n" and m.read("stack_max_size") == "0\n",
              "stack tracer off at first")
        m.ok("set_ftrace_filter", "mix:stacktrace\n", append=True)
        wait_for(lambda: stack_after(m.read("trace"), "mix"), "a stacktrace entry")
        fr = stack_after(m.read("trace"), "mix")
        check(fr[:2] == ["mix", "checksum"], "stack of mix: %r" % fr)
        m.ok("set_ftrace_filter", "!mix:stacktrace\n", append=True)
        # counted: it fires in a mount without a recording (the array's tracing_on)
        m.ok("trace", "\n")
        m.ok("set_ftrace_filter", "mix:stacktrace:3\n", append=True)
        wait_for(lambda: "mix:stacktrace:count=0" in m.read("set_ftrace_filter"),
                 "a counted stacktrace used up its count")
        check(stack_after(m.read("trace"), "mix")[:1] == ["mix"], "counted stacktrace entry")
        m.ok("set_ftrace_filter", "!mix:stacktrace:0\n", append=True)
        # func_stack_trace: a stack after each function event
        m.ok("set_ftrace_filter", "checksum\n")
        m.ok("options/func_stack_trace", "1\n")
        m.ok("trace", "\n")
        m.ok("current_tracer", "function\n")
        wait_for(lambda: stack_after(m.read("trace"), "checksum"), "func_stack_trace entries")
        text = m.read("trace")
        check(stack_after(text, "checksum")[:2] == ["checksum", "work"],
              "func_stack_trace: %r" % stack_after(text, "checksum"))
        ls = text.splitlines()
        i = next(k for k, l in enumerate(ls) if " checksum <-" in l)
        check(i + 1 < len(ls) and ls[i + 1].endswith("<stack trace>"),
              "the stack follows the function's line: %r" % ls[i:i + 2])
        m.ok("current_tracer", "nop\n")
        m.ok("options/func_stack_trace", "0\n")
        m.ok("set_ftrace_filter", "\n")
        # the stack tracer
        m.bad("stack_trace_filter", "no_such_function_xyz\n", errno.EINVAL)
        m.ok("stack_trace_filter", "mix\n")
        check(m.read("stack_trace_filter") == "mix\n", "stack_trace_filter reads back")
        m.bad("stack_max_size", "lots\n", errno.EINVAL)
        m.bad("stack_tracer_enabled", "on\n", errno.EINVAL)
        m.ok("stack_max_size", "0\n")
        m.ok("stack_tracer_enabled", "1\n")
        wait_for(lambda: " 0) " in m.read("stack_trace"), "the stack tracer records")
        # the tracee runs on, and a deeper stack may replace the maximum between two
        # reads: stop the tracer first, then stack_trace and stack_max_size agree
        m.ok("stack_tracer_enabled", "0\n")
        st = m.read("stack_trace")
        rows = [l for l in st.splitlines() if l[3:5] == ") "]
        check(rows and rows[0].split()[-1].startswith("mix+0x") and
              rows[1].split()[-1].startswith("checksum+0x"), "stack_trace rows: %r" % st)
        depth0 = int(rows[0].split()[1])
        check(int(m.read("stack_max_size")) == depth0 > 0, "stack_max_size is entry 0's depth")
        check(all(int(a.split()[1]) >= int(b.split()[1]) for a, b in zip(rows, rows[1:])),
              "depths decrease: %r" % st)
        check("Stack tracer disabled" not in m.read("stack_trace"), "what was seen stays")
        m.ok("stack_trace_filter", "\n")
        check(m.read("stack_trace_filter") == "#### all functions enabled ####\n",
              "stack_trace_filter cleared")
        check(m.read("enabled_functions") == "", "nothing enabled at the end")
    finally:
        m.umount()
    t.finish()


def case_concurrency():
    t = Tracee(3)
    m = Mount(t.pid)
    avail = set(m.read("available_filter_functions").split())
    errors = []
    stop = threading.Event()
    seen = []

    def writer(globs):
        try:
            for k in range(150):
                g = globs[k % len(globs)]
                r = m.write("set_ftrace_filter", g + "\n", append=bool(k % 3))
                if r:
                    errors.append("write %s: %s" % (g, os.strerror(r)))
                f = m.read("set_ftrace_filter").split("\n")
                for name in f:
                    if name and name != "#### all functions enabled ####" and name not in avail:
                        errors.append("read back %r" % name)
        except Exception as e:  # noqa: BLE001 - a thread reports, the case fails
            errors.append(repr(e))

    def reader():
        fd = os.open(m.path("trace_pipe"), os.O_RDONLY | os.O_NONBLOCK)
        try:
            while not stop.is_set():
                try:
                    seen.append(len(os.read(fd, 65536)))
                except BlockingIOError:
                    time.sleep(0.005)
        finally:
            os.close(fd)

    try:
        m.ok("current_tracer", "function\n")
        ths = [threading.Thread(target=writer, args=(["mix", "checksum", "!mix"],)),
               threading.Thread(target=writer, args=(["checksum", "mix", "!checksum"],)),
               threading.Thread(target=reader)]
        for th in ths:
            th.start()
        for th in ths[:2]:
            th.join(300)
        stop.set()
        ths[2].join(60)
        check(not errors, "concurrent writers: %s" % errors[:5])
        check(sum(seen) > 0, "the reader consumed events")
        m.ok("current_tracer", "nop\n")
        check(m.read("enabled_functions") == "", "nothing enabled at the end")
    finally:
        m.umount()
    t.finish()


def dir_answers(d):
    """nothing stuck on @d: listing it returns (a hung FUSE mount would not)"""
    try:
        subprocess.run(["ls", "-a", d], capture_output=True, timeout=30)
        return True
    except subprocess.TimeoutExpired:
        return False


def gone(pid):
    """@pid exited and was reaped: not left a zombie, nor stuck in D state"""
    return not os.path.exists("/proc/%d" % pid)


def server_pid(d):
    """the usft mount process serving @d"""
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                cmd = open("/proc/%s/cmdline" % p, "rb").read().split(b"\0")
            except OSError:
                continue
            if len(cmd) > 3 and cmd[1] == b"mount" and cmd[3].decode() == d:
                return int(p)
    return None


def case_death():
    # the target exits: ENODEV (never a hang), then the mount goes
    t = Tracee()
    m = Mount(t.pid)
    fd = os.open(m.path("trace_pipe"), os.O_RDONLY)
    got = []

    def blocked():
        try:
            os.read(fd, 4096)
            got.append("data")
        except OSError as e:
            got.append(e.errno)

    m.ok("set_ftrace_filter", "mix\n")
    th = threading.Thread(target=blocked)
    th.start()
    time.sleep(0.05)
    t.kill()
    th.join(30)
    check(not th.is_alive(), "a trace_pipe reader hangs after the target died")
    try:
        os.close(fd)
    except OSError:
        pass
    wait_for(lambda: not mounted(m.dir), "unmounted after the target died")
    check(dir_answers(m.dir), "the mount point hangs after the target died")

    # kill -9 of the server: auto_unmount takes the mount away
    t = Tracee()
    m = Mount(t.pid)
    sp = server_pid(m.dir)
    check(sp, "no usft mount process found")
    os.kill(sp, signal.SIGKILL)
    wait_for(lambda: not mounted(m.dir), "unmounted after kill -9 of the server")
    wait_for(lambda: gone(sp), "the killed server gone (not in D state)")
    check(dir_answers(m.dir), "the mount point hangs after the server was killed")
    t.finish()


def mount_dir(name):
    d = os.path.join(ARGS.work, name)
    if mounted(d):
        subprocess.run(["fusermount3", "-u", "-z", d])
    os.makedirs(d, exist_ok=True)
    return d


def fsname_is_tracefs(d):
    with open("/proc/mounts") as f:
        return any(l.split()[1] == d and l.startswith("tracefs ") for l in f)


def trace_in(d, filt, tracer, want, what):
    """echo FILT > set_ftrace_filter; echo TRACER > current_tracer; then
    wait for WANT in trace"""
    for name, v in (("set_ftrace_filter", filt), ("current_tracer", tracer)):
        with open(os.path.join(d, name), "w") as f:
            f.write(v + "\n")
    wait_for(lambda: want in open(os.path.join(d, "trace")).read(), what)


def usft_until(args, body):
    """`usft ARGS` in the background while body(p) runs (and ends it);
    Return: (exit status, stderr); killed if body failed"""
    p = subprocess.Popen([ARGS.usft] + [str(a) for a in args], env=env(), cwd=ARGS.work,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        body(p)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    return p.returncode, err.decode(errors="replace")


def case_automount():
    """record --mount DIR -- PROG, record -P PID --mount DIR, attach PID
    --mount DIR: mounted once the runtime answers, gone when the recording
    ends / on detach; a detach leaves no tracefs tracer registered"""
    # record PROG: -p nop, the tracefs only (the runtime's control socket
    # served without a recording); PROG's exit ends it
    d = mount_dir("rec")

    def with_toykernel(p):
        line = p.stdout.readline().decode()
        check(line.startswith("toykernel: pid"), "toykernel did not start: %r" % line)
        wait_for(lambda: mounted(d), "record --mount: mounted")
        check(fsname_is_tracefs(d), "record --mount: fsname tracefs")
        check(open(os.path.join(d, "current_tracer")).read() == "nop\n", "current_tracer nop")
        trace_in(d, "schedule", "function", " schedule <-", "record --mount: schedule events")
        os.kill(int(line.split()[2].rstrip(",")), signal.SIGTERM)

    rc, err = usft_until(["record", "-p", "nop", "-o", "t.dat", "--mount", d, "--",
                          ARGS.toykernel, "--cpus", "2"], with_toykernel)
    check(rc == 0, "record --mount: exit %d: %s" % (rc, err))
    check("mounted on %s" % d in err, "record --mount says where: %s" % err)
    check("left processes running" not in err, "the mount server is not a leftover: %s" % err)
    wait_for(lambda: not mounted(d), "record --mount: unmounted at the end")

    # attach --mount, then detach: unmounted, and no tracer left in the process
    t = Tracee()
    d = mount_dir("att")
    rc, out, err = harness.usft("attach", t.pid, "--mount", d)
    check(rc == 0, "attach --mount: %d %s" % (rc, err))
    check(mounted(d) and fsname_is_tracefs(d), "attach --mount: mounted on return")
    os.mkdir(os.path.join(d, "instances", "foo"))
    trace_in(d, "mix", "function", " mix <-", "attach --mount: mix events")
    rc, out, err = harness.usft("detach", t.pid)
    check(rc == 0, "detach: %d %s" % (rc, err))
    wait_for(lambda: not mounted(d), "unmounted on detach")
    check(dir_answers(d), "the mount point answers after the detach")
    m = Mount(t.pid, "again")
    try:
        check(m.read("current_tracer") == "nop\n", "after a detach: current_tracer nop")
        check(m.read("enabled_functions") == "", "after a detach: nothing enabled")
        check(os.listdir(m.path("instances")) == [], "after a detach: no instances")
    finally:
        m.umount()

    # record -P --mount: the mount goes when the recording ends, the process stays
    d = mount_dir("recp")

    def with_server(p):
        wait_for(lambda: mounted(d), "record -P --mount: mounted")
        trace_in(d, "checksum mix", "function_graph", "checksum() {",
                 "record -P --mount: graph lines")
        p.send_signal(signal.SIGINT)

    rc, err = usft_until(["record", "-q", "-P", t.pid, "-p", "function", "-l", "checksum",
                          "-o", "p.dat", "--mount", d], with_server)
    check(rc == 0, "record -P --mount: exit %d: %s" % (rc, err))
    check(not mounted(d), "record -P --mount: unmounted when the recording ended")
    check(t.alive(), "the process lives on")
    # a bad DIR: refused before anything is attached or run
    rc, out, err = harness.usft("attach", t.pid, "--mount", os.path.join(ARGS.work, "none"))
    check(rc == 2 and "mkdir -p" in err, "attach --mount to no directory: %d %s" % (rc, err))
    rc, out, err = harness.usft("record", "--mount", os.path.join(ARGS.work, "none"), "--", "true")
    check(rc == 2 and "mkdir -p" in err, "record --mount to no directory: %d %s" % (rc, err))
    t.finish()

class ModLoad:
    """samples/tracee/modload.c under `usft record -p nop --mount DIR` (its
    only thread waits inside libc's read(): no attach point), dlopen()s
    libtracee-plugin.so when told"""

    def __init__(self, d):
        self.p = subprocess.Popen([ARGS.usft, "record", "-q", "-p", "nop", "-o", "mod.dat",
                                   "--mount", d, "--", harness.tracee("modload")],
                                  env=env(), cwd=ARGS.work, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE)
        check(self.ask(None) == "ready", "tracee-modload did not start")
        wait_for(lambda: mounted(d), "record --mount: mounted")

    def ask(self, cmd):
        if cmd:
            self.p.stdin.write((cmd + "\n").encode())
            self.p.stdin.flush()
        return self.p.stdout.readline().decode().strip()

    def finish(self):
        self.p.stdin.close()
        check(self.p.wait(timeout=60) == 0, "tracee-modload failed")


class Mounted(Mount):
    """a mount someone else made"""

    def __init__(self, d):
        self.dir = d


def case_mod():
    d = mount_dir("mod")
    t = ModLoad(d)
    m = Mounted(d)
    plug = "libtracee-plugin"
    try:
        check("plugin_entry" not in m.read("available_filter_functions"), "plugin not loaded yet")
        # the kernel's cache_mod(): an object not loaded is cached, read back as written
        m.ok("set_ftrace_filter", "plugin_*:mod:%s\n" % plug)
        check(m.read("set_ftrace_filter") == "plugin_*:mod:%s\n" % plug,
              "cached filter read back (no 'all functions' line)")
        m.ok("set_ftrace_filter", "main_work:mod:main\n", append=True)
        check(m.read("set_ftrace_filter") == "main_work\nplugin_*:mod:%s\n" % plug,
              "functions first, then the cache")
        m.ok("set_ftrace_filter", "plugin_*:mod:%s\n" % plug)
        m.ok("set_ftrace_notrace", "plugin_helper:mod:%s\n" % plug)
        check(m.read("set_ftrace_notrace") ==
              "#### no functions disabled ####\nplugin_helper:mod:%s\n" % plug, "notrace cache")
        os.mkdir(m.path("instances/i"))
        m.ok("instances/i/set_ftrace_filter", ":mod:%s\n" % plug)
        m.ok("instances/i/set_ftrace_filter", "x:mod:nowhere\n", append=True)
        check(m.read("instances/i/set_ftrace_filter") == "x:mod:nowhere\n:mod:%s\n" % plug,
              "instance cache, newest first")
        # refused writes change nothing: a loaded object without the function,
        # '!' of nothing cached
        before = m.read("set_ftrace_filter")
        m.bad("set_ftrace_filter", "no_such_fn:mod:main\n", errno.EINVAL, append=True)
        m.bad("set_ftrace_filter", "!other:mod:%s\n" % plug, errno.EINVAL, append=True)
        m.bad("set_ftrace_filter", "zzz:mod:nowhere no_such_fn\n", errno.EINVAL, append=True)
        check(m.read("set_ftrace_filter") == before, "refused writes left the cache")
        m.ok("instances/i/set_ftrace_filter", "!*:mod:nowhere\n", append=True)
        check(m.read("instances/i/set_ftrace_filter") == ":mod:%s\n" % plug, "'!*' dropped it")
        # FL_MOD: a filter waiting for its object traces nothing meanwhile
        m.ok("current_tracer", "function\n")
        check(t.ask("main") == "main 2", "main_work")
        check(func_lines(m) == [], "a filter waiting for its object traced: %s" % func_lines(m))
        check(m.read("enabled_functions") == "", "nothing enabled while waiting")
        # process_cached_mods(): the dlopen() applies them, in every array
        check(t.ask("load") == "loaded 21", "load the plugin")
        got = m.read("set_ftrace_filter")
        check(sorted(got.splitlines()) == ["plugin_entry [%s]" % plug, "plugin_helper [%s]" % plug],
              "applied at dlopen: %r" % got)
        check(m.read("set_ftrace_notrace") == "plugin_helper [%s]\n" % plug, "notrace applied")
        check(m.read("instances/i/set_ftrace_filter") == got, "instance applied")
        check(t.ask("call") == "call 31", "call the plugin")
        names = {l.split(":")[-1].split()[0] for l in func_lines(m)}
        check(names == {"plugin_entry"}, "traced after the load: %s" % names)
        m.ok("current_tracer", "nop\n")
        os.rmdir(m.path("instances/i"))
        # '>' empties the cache with the filter (kernel ftrace_regex_open())
        m.ok("set_ftrace_filter", "y:mod:nowhere\n")
        with open(m.path("set_ftrace_filter"), "w"):
            pass
        check(m.read("set_ftrace_filter") == "#### all functions enabled ####\n", "'>' cleared")
        check(t.ask("unload") == "unloaded", "unload")
    finally:
        m.umount()
    t.finish()


def plugin_addrs(m):
    """the plugin's functions in available_filter_functions_addrs: {name: address}"""
    return {l.split()[1]: l.split()[0] for l in m.read("available_filter_functions_addrs").splitlines()
            if "libtracee-plugin" in l}


def case_unload():
    """kernel clear_mod_from_hashes(): a dlclose() takes the unloaded object's
    functions out of every array's filters, registered or not, so an object
    loaded again at the same address is not selected by them"""
    d = mount_dir("unload")
    t = ModLoad(d)
    m = Mounted(d)
    plug = "libtracee-plugin"
    try:
        check(t.ask("load") == "loaded 21", "load the plugin")
        first = plugin_addrs(m)
        check(first, "the plugin's functions are listed")
        # no tracer runs: every ops holding these hashes is unregistered
        os.mkdir(m.path("instances/u"))
        m.ok("instances/u/set_ftrace_filter", "plugin_entry\n")
        m.ok("instances/u/set_ftrace_notrace", "plugin_helper\n")
        m.ok("set_ftrace_filter", "plugin_helper\n")
        m.ok("set_ftrace_notrace", "plugin_entry\n")
        m.ok("set_graph_function", "plugin_entry main_work\n")
        m.ok("set_graph_notrace", "plugin_helper\n")
        m.ok("stack_trace_filter", "plugin_entry\n")
        check(m.read("instances/u/set_ftrace_filter") == "plugin_entry [%s]\n" % plug,
              "instance filter before the unload")
        # the same object again, at the same address (mmap reuses the gap)
        for _ in range(8):
            check(t.ask("unload") == "unloaded", "unload")
            check(t.ask("load") == "loaded 21", "load the plugin again")
            if plugin_addrs(m) == first:
                break
        check(plugin_addrs(m) == first, "the plugin never came back at %s" % first)
        want = {"instances/u/set_ftrace_filter": "#### all functions enabled ####\n",
                "instances/u/set_ftrace_notrace": "",
                "set_ftrace_filter": "#### all functions enabled ####\n",
                "set_ftrace_notrace": "",
                "set_graph_function": "main_work\n",
                "set_graph_notrace": "",
                "stack_trace_filter": "#### all functions enabled ####\n"}
        for f, w in want.items():
            got = m.read(f)
            if w == "":
                check(plug not in got, "%s names the unloaded object's function: %r" % (f, got))
            else:
                check(got == w, "%s after dlclose+dlopen: %r, want %r" % (f, got, w))
        # the callbacks' graph set too: plugin_entry is not a graph function any more
        with open(m.path("set_ftrace_filter"), "w"):
            pass
        with open(m.path("trace"), "w"):
            pass
        m.ok("current_tracer", "function_graph\n")
        check(t.ask("call") == "call 31", "call the plugin")
        check(t.ask("main") == "main 2", "main_work")
        text = m.read("trace")
        m.ok("current_tracer", "nop\n")
        check("main_work" in text, "main_work traced under function_graph: %r" % text[-2000:])
        check("plugin_entry" not in text, "the unloaded plugin_entry's graph entry matched "
              "the new one: %r" % text[-2000:])
        os.rmdir(m.path("instances/u"))
        check(t.ask("unload") == "unloaded", "unload")
    finally:
        m.umount()
    t.finish()


CASES = {"files": case_files, "pipe": case_pipe, "instances": case_instances, "stack": case_stack,
         "concurrency": case_concurrency, "death": case_death, "automount": case_automount,
         "mod": case_mod, "unload": case_unload}


def needs():
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse"):
        return "needs root and /dev/fuse"
    return None


def toykernel_option(ap):
    ap.add_argument("--toykernel", default="", help="samples/toykernel's program (automount)")


def main():
    return harness.main(CASES, "tracefs_", options=toykernel_option, skip=needs)


if __name__ == "__main__":
    sys.exit(main())
