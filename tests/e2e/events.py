#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end test of trace events through `usft mount` (docs/tracefs.md,
Events) on samples/toykernel, which fires the kernel's sched:* and
signal:signal_generate events where the kernel does.

events.py mount --usft PATH --tracees DIR --work DIR --toykernel PATH
  available_events, the events/ tree and its files, set_event, enable
  files, event lines in trace, a filter (and bad ones: EINVAL, the
  kernel's error_log entry and caret, the filter unchanged), enable_event with a count in
  set_ftrace_filter, an instance's own events, refused writes unchanged.
Needs root and /dev/fuse (exit 77, skipped, otherwise).  Never asserts a time.
"""
import errno
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import ARGS, check, env, wait_for  # noqa: E402
from tracefs import Mount, lines  # noqa: E402

SW = re.compile(r"^\s*\S+-\d+\s+\[\d{3}\] \S+ +\d+\.\d{6}: sched_switch: prev_comm=\S+ "
                r"prev_pid=\d+ prev_prio=120 prev_state=(R|R\+|Z) ==> next_comm=\S+ "
                r"next_pid=(\d+) next_prio=120$")


class Toy:
    def __init__(self):
        self.p = subprocess.Popen([ARGS.toykernel, "--cpus", "2"], env=env(), cwd=ARGS.work,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        line = self.p.stdout.readline().decode()
        check(line.startswith("toykernel: pid"), "toykernel did not start: %r" % line)
        self.pid = self.p.pid

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.communicate(timeout=30)

    def stop(self):
        self.p.terminate()
        out, err = self.p.communicate(timeout=60)
        check(self.p.returncode == 0, "toykernel failed: %s %s" % (out[-300:], err[-300:]))


def event_lines(m, name, d=""):
    return [l for l in lines(m.read(d + "trace")) if " %s: " % name in l]


def case_mount():
    t = Toy()
    try:
        mount_checks(t)
    finally:
        t.kill()  # a failed check leaves no toykernel behind


def mount_checks(t):
    m = Mount(t.pid)
    try:
        avail = m.read("available_events").split()
        for e in ("sched:sched_switch", "sched:sched_wakeup_new", "sched:sched_process_fork",
                  "sched:sched_process_exec", "sched:sched_process_exit",
                  "signal:signal_generate"):
            check(e in avail, "available_events lacks %s: %s" % (e, avail))
        check(avail == sorted(avail), "available_events unsorted")
        ev = "events/sched/sched_switch/"
        check(sorted(os.listdir(m.path(ev))) == ["enable", "filter", "format", "id", "trigger"],
              "event files: %s" % os.listdir(m.path(ev)))
        check({"enable", "filter", "sched", "signal"} <= set(os.listdir(m.path("events/sched")))
              | {"sched", "signal"} and "sched" in os.listdir(m.path("events")),
              "events/ lists the systems")
        fmt = m.read(ev + "format")
        check("\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;" in fmt and
              "\tfield:char prev_comm[16];\toffset:8;\tsize:16;" in fmt and
              'print fmt: "prev_comm=%s prev_pid=%d' in fmt, "format: %s" % fmt)
        check(("ID: %s" % m.read(ev + "id").strip()) in fmt, "id and format agree")
        check(m.read(ev + "filter") == "none\n" and m.read(ev + "enable") == "0\n", "initial state")
        check(all(l.startswith("#") for l in m.read(ev + "trigger").splitlines()), "trigger")

        # set_event and the enable files
        m.ok("set_event", "sched:sched_switch\n")
        check(m.read("set_event") == "sched:sched_switch\n", "set_event: %r" % m.read("set_event"))
        check(m.read(ev + "enable") == "1\n", "enable after set_event")
        check(m.read("events/sched/enable") == "X\n", "events/sched/enable mixed")
        wait_for(lambda: event_lines(m, "sched_switch"), "sched_switch lines in trace")
        for l in event_lines(m, "sched_switch"):
            check(SW.match(l), "not the kernel's sched_switch line: %r" % l)
        m.bad("set_event", "sched:no_such_event\n", errno.EINVAL)
        check(m.read("set_event") == "sched:sched_switch\n", "refused set_event changed it")
        m.ok("set_event", "!sched:sched_switch\n", append=True)
        check(m.read("set_event") == "" and m.read(ev + "enable") == "0\n", "!event disables")

        # a filter
        m.ok(ev + "filter", "next_pid == 1 && prev_comm != \"nosuch\"\n")
        m.ok(ev + "enable", "1\n")
        m.ok("trace", "\n")
        wait_for(lambda: event_lines(m, "sched_switch"), "filtered sched_switch lines")
        got = event_lines(m, "sched_switch")
        check(all(SW.match(l).group(2) == "1" for l in got), "filter let through: %s" % got[:3])
        m.ok(ev + "enable", "0\n")

        # a bad filter: EINVAL, the error_log entry, the caret, the filter shows it
        m.ok("error_log", "\n")
        bad = "((sig >= 10 && sig < 15) || dsig == 17) && comm != bash"
        m.bad("events/signal/signal_generate/filter", bad, errno.EINVAL, append=True)
        log = m.read("error_log").splitlines()
        check(len(log) == 3 and re.match(r"^\[ *\d+\.\d{6}\] event filter parse error: error: "
                                          r"Field not found$", log[0]), "error_log: %s" % log)
        check(log[1] == "  Command: " + bad and log[2] == " " * (11 + 33) + "^",
              "error_log command and caret: %s" % log)
        check(m.read("events/signal/signal_generate/filter") == "none\n",
              "a refused filter changed the filter")
        m.ok("events/signal/signal_generate/filter", "sig == 17\n")
        m.bad("events/signal/signal_generate/filter", "sig == 'x'\n", errno.EINVAL)
        check(m.read("events/signal/signal_generate/filter") == "sig == 17\n",
              "a refused filter replaced the one set")
        check(m.read("error_log").count("event filter parse error") == 2, "second entry")
        m.ok("events/signal/signal_generate/filter", "0\n")
        check(m.read("events/signal/signal_generate/filter") == "none\n", "filter cleared")

        # a subsystem filter: the events with the field get it; one that fits none is refused
        m.ok("events/sched/filter", "pid == 1\n")
        check(m.read("events/sched/sched_process_exit/filter") == "pid == 1\n" and
              m.read(ev + "filter") == "none\n", "subsystem filter on the events it fits")
        m.bad("events/sched/filter", "nosuch == 1\n", errno.EINVAL)
        check(m.read("events/sched/filter") == "pid == 1\n", "refused subsystem filter kept")
        check("Couldn't find or set field in one of a subsystem's events" in m.read("error_log"),
              "error_log of the subsystem filter")
        m.ok("events/sched/filter", "0\n")
        check(m.read("events/sched/sched_process_exit/filter") == "none\n" and
              m.read("events/sched/filter").startswith("### global filter ###"), "cleared")

        # enable_event with a count: soft mode ("0*"), then soft-enabled by do_exit ("1*")
        se = "events/signal/signal_generate/enable"
        m.ok("set_ftrace_filter", "do_exit:enable_event:signal:signal_generate:2\n")
        check("do_exit:enable_event:signal:signal_generate:count=" in m.read("set_ftrace_filter"),
              "read back: %s" % m.read("set_ftrace_filter"))
        wait_for(lambda: m.read(se) == "1*\n", "do_exit soft-enables signal_generate")
        wait_for(lambda: event_lines(m, "signal_generate"), "signal_generate lines")
        check(re.search(r"signal_generate: sig=17 errno=0 code=1 comm=init pid=1 grp=1 res=[01]$",
                        event_lines(m, "signal_generate")[0]), "signal_generate line")
        m.ok("set_ftrace_filter", "!do_exit:enable_event:signal:signal_generate:0\n")
        check("enable_event" not in m.read("set_ftrace_filter"), "probe removed")
        check(m.read(se) == "1\n", "out of soft mode, still enabled: %r" % m.read(se))
        m.ok(se, "0\n")
        m.bad("set_ftrace_filter", "do_exit:enable_event:signal:nosuch\n", errno.EINVAL)

        # set_event_pid: the events of one thread (cpu0's)
        tids = [d for d in os.listdir("/proc/%d/task" % t.pid)
                if open("/proc/%d/task/%s/comm" % (t.pid, d)).read().strip() == "cpu0"]
        check(len(tids) == 1, "toykernel's cpu0 thread: %s" % tids)
        m.ok("set_event_pid", tids[0] + "\n")
        m.bad("set_event_pid", "12x\n", errno.EINVAL, append=True)
        check(m.read("set_event_pid") == tids[0] + "\n", "set_event_pid: %r" % m.read("set_event_pid"))
        m.ok(ev + "enable", "1\n")
        m.ok("trace", "\n")
        wait_for(lambda: len(event_lines(m, "sched_switch")) >= 2, "cpu0's sched_switch lines")
        m.ok(ev + "enable", "0\n")
        got = event_lines(m, "sched_switch")
        check(all(re.match(r"^\s*cpu0-%s\s" % tids[0], l) for l in got), "other threads: %s" % got[:3])
        m.ok("set_event_pid", "\n")
        check(m.read("set_event_pid") == "", "set_event_pid cleared")

        # event triggers: traceoff with a filter, enable_event with a count
        tg = ev + "trigger"
        m.ok(tg, "traceoff if next_pid == 1\n")
        check(m.read(tg) == "traceoff:unlimited if next_pid == 1\n", "trigger: %r" % m.read(tg))
        check(m.read(ev + "enable") == "0*\n", "a trigger holds its event in soft mode")
        wait_for(lambda: m.read("tracing_on") == "0\n", "the traceoff trigger fires")
        m.bad(tg, "traceoff\n", errno.EEXIST, append=True)
        m.bad(tg, "nosuch\n", errno.EINVAL, append=True)
        m.bad(tg, "traceon if nosuch == 1\n", errno.EINVAL, append=True)
        check(m.read(tg) == "traceoff:unlimited if next_pid == 1\n", "refused triggers changed it")
        m.ok(tg, "!traceoff:unlimited if next_pid == 1\n", append=True)
        check(m.read(tg).startswith("# Available triggers:") and m.read(ev + "enable") == "0\n",
              "trigger removed: %r" % m.read(tg))
        m.ok("tracing_on", "1\n")
        xt = "events/sched/sched_process_exit/trigger"
        m.ok(xt, "enable_event:signal:signal_generate:1\n")
        check(m.read(se) in ("0*\n", "1*\n"), "the target in soft mode: %r" % m.read(se))
        wait_for(lambda: m.read(xt) == "enable_event:signal:signal_generate:count=0\n",
                 "the enable_event trigger fires once")
        check(m.read(se) == "1*\n", "the target soft-enabled")
        m.ok(xt, "!enable_event:signal:signal_generate\n")
        check(m.read(se) == "1\n", "out of soft mode: %r" % m.read(se))
        m.ok(se, "0\n")

        # an instance has its own
        os.mkdir(m.path("instances/ev"))
        i = "instances/ev/"
        check(m.read(i + ev + "enable") == "0\n", "instance starts off")
        m.ok(i + "events/sched/enable", "1\n")
        check(m.read(i + "events/sched/enable") == "1\n" and m.read("events/sched/enable") == "0\n",
              "instance enable is its own")
        m.ok("trace", "\n")
        wait_for(lambda: event_lines(m, "sched_wakeup_new", i), "instance gets events")
        check(not event_lines(m, "sched_switch"), "top got the instance's events")
        os.rmdir(m.path("instances/ev"))
        m.ok("events/enable", "0\n")
        check(m.read("events/enable") == "0\n", "events/enable")

        # detach turns every event off: a new attach finds none enabled
        m.ok("set_event", "sched:sched_switch\n")
        m.umount()
        rc, out, err = harness.usft("detach", t.pid)
        check(rc == 0, "usft detach: %d %s" % (rc, err))
        m = Mount(t.pid)
        check(m.read("set_event") == "" and m.read(ev + "enable") == "0\n",
              "events still enabled after detach: %r" % m.read("set_event"))
    finally:
        m.umount()
    t.stop()


CASES = {"mount": case_mount}


def needs():
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse"):
        return "needs root and /dev/fuse"
    return None


def options(ap):
    ap.add_argument("--toykernel", required=True)


if __name__ == "__main__":
    sys.exit(harness.main(CASES, "events_", options=options, skip=needs))
