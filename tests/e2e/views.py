#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`usft report`'s views and `usft info` (docs/report.md): golden outputs of
names, nesting and counts, never times.  One ctest test per case, like
e2e.py (whose helpers it uses)."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e  # noqa: E402
from e2e import Fail, check, usft, tracee, record, golden  # noqa: E402,F401

TIME = r"\s*(?:\d+ ns|\d+\.\d{3} (?:us|ms| s))"


def rep(*extra, inp="trace.dat", rc_want=0):
    rc, out, err = usft("report", "-i", inp, *extra)
    check(rc == rc_want, "usft report %s: rc %d, want %d\n%s" % (" ".join(extra), rc, rc_want,
                                                                 err))
    return out if rc == 0 else err


def summary_rows(text):
    """[(calls, name)] of a summary, times checked for shape and dropped."""
    rows = []
    for line in text.splitlines():
        if not line.strip() or re.match(r"^\s*=+\s", line) or line.endswith("  Function"):
            continue
        m = re.match(r"^" + TIME * 2 + r"\s+(\d+)" + TIME * 3 + r"  (.*)$", line)
        if not m:
            m = re.match(r"^\s+(\d+)  (.*)$", line)      # function tracer: calls only
        check(m, "summary line of an unknown shape: %r" % line)
        rows.append((int(m.group(1)), m.group(2)))
    return rows


def rows_text(rows):
    return "".join("%d %s\n" % r for r in rows)


def graph_shape(text):
    """the call graph with its time column blanked"""
    out = []
    for line in text.splitlines():
        out.append(re.sub(r"^" + TIME + r" :", "  TIME :", line).rstrip())
    return "\n".join(out) + "\n"


def folded(text):
    """{stack: self_ns} of folded lines; every count a positive integer"""
    st = {}
    for line in text.splitlines():
        m = re.match(r"^(\S+) (\d+)$", line)
        check(m, "folded line of an unknown shape: %r" % line)
        check(int(m.group(2)) > 0, "zero count: %r" % line)
        st[m.group(1)] = int(m.group(2))
    return st


def case_summary():
    record([tracee("nest")])
    rows = summary_rows(rep("--summary", "-s", "func"))
    golden("views_summary", rows_text(rows))
    # every sort key is accepted and keeps the same rows
    for keys in ("total", "self", "call", "avg", "min", "max", "func", "calls,func",
                 "self,total"):
        got = sorted(summary_rows(rep("-s", keys)))
        check(got == sorted(rows), "-s %s: %s" % (keys, got))
    # calls sorts by count, names break ties
    calls = summary_rows(rep("-s", "call,func"))
    check(calls[0] == (5, "fact") and calls[1] == (2, "leaf"), "-s call: %s" % calls)
    # -D 1: main only; -D 2: main and its children (fact's recursion is deeper)
    d1 = summary_rows(rep("-s", "func", "-D", "1"))
    check(d1 == [(1, "main")], "-D 1: %s" % d1)
    d2 = [n for _, n in summary_rows(rep("-s", "func", "-D", "2"))]
    check(d2 == ["fact", "main", "outer", "tail_caller"], "-D 2: %s" % d2)
    d2 = summary_rows(rep("-s", "func", "-D", "2"))
    check((1, "fact") in d2, "-D 2: fact counted %s" % d2)
    # -t: a threshold above every call hides them all; 0 hides nothing
    check(summary_rows(rep("--summary", "-t", "100s")) == [], "-t 100s shows calls")
    check(sorted(summary_rows(rep("--summary", "-t", "0ns"))) == sorted(rows), "-t 0ns")
    # the function tracer gives calls only
    record([tracee("nest")], "function", out="fn.dat")
    frows = summary_rows(rep("-s", "func", inp="fn.dat"))
    check(frows == rows, "function tracer summary %s vs %s" % (frows, rows))
    # the profile tracer's tables
    record([tracee("nest")], "profile", out="prof.dat")
    prow = [l.split()[-1] for l in rep("--summary", inp="prof.dat").splitlines()[2:]]
    check(sorted(prow) == sorted(n for _, n in rows), "profile summary %s" % prow)


def case_graph():
    record([tracee("nest")])
    golden("views_graph_main", graph_shape(rep("--graph", "main")))
    golden("views_graph_outer", graph_shape(rep("-g", "out*")))
    # -D bounds the graph too; a function not called says so
    g = graph_shape(rep("--graph", "main", "-D", "2"))
    check("middle" not in g and "outer" in g, "-D 2 graph:\n" + g)
    check("no call of 'nothing'" in rep("--graph", "nothing"), "--graph nothing")
    # the function tracer has no durations: the view says what to do
    record([tracee("nest")], "function", out="fn.dat")
    err = rep("--graph", "main", inp="fn.dat", rc_want=1)
    check("-p function_graph" in err, "graph of a function trace: " + err)


def case_folded():
    record([tracee("nest")])
    st = folded(rep("--format", "folded"))
    golden("views_folded", "".join(s + "\n" for s in sorted(st)))
    # the self times add up to main's total (every frame closes in main)
    total = summary_rows(rep("-s", "func"))
    check(sum(st.values()) > 0, "empty folded output")
    # -t 100s leaves nothing; -D 1 leaves "main" alone
    check(rep("--format", "folded", "-t", "100s") == "", "folded -t 100s")
    check(list(folded(rep("--format", "folded", "-D", "1"))) == ["main"], "folded -D 1")
    check(total, "no summary")


def case_info():
    record([tracee("nest")], extra=("-l", "main", "-l", "outer", "-l", "middle", "-l", "leaf"))
    out = rep()  # the plain report still works
    rc, info, err = usft("info", "-i", "trace.dat")
    check(rc == 0, "usft info: " + err)
    want = {"tracer": "function_graph", "processes": "1", "events": "10", "lost": "0",
            "filter (-l)": "main outer middle leaf", "program": tracee("nest")}
    got = {}
    for line in info.splitlines():
        m = re.match(r"^# (\S.*?)\s+: (.*)$", line)
        if m:
            got.setdefault(m.group(1), m.group(2))
    for k, v in want.items():
        check(got.get(k) == v, "info %s: %r, want %r\n%s" % (k, got.get(k), v, info))
    for k in ("command line", "first event", "last event", "duration", "threads",
              "exit status", "usft version", "clock", "buffer size"):
        check(k in got, "info has no %r line:\n%s" % (k, info))
    check(got.get("exit status") == "exited 0", "exit status %r" % got.get("exit status"))
    check(out, "empty report")
    rc, _, err = usft("info", "-i", "no-such.dat")
    check(rc == 1 and "No such file" in err, "info on a missing file: %d %s" % (rc, err))


def case_select():
    record([tracee("threads")])
    rc, info, _ = usft("info", "-i", "trace.dat")
    tids = [int(l.split()[1]) for l in info.splitlines() if re.match(r"^#\s+\d+\s", l)]
    pid = int(re.search(r"# process\s+: \S+-(\d+)", info).group(1))
    check(len(tids) == 5 and pid in tids, "threads in info: %s" % tids)
    main = summary_rows(rep("-s", "func", "--tid", str(pid)))
    check(main == [(1, "main"), (2, "step"), (1, "work")], "--tid main: %s" % main)
    worker = [t for t in tids if t != pid][0]
    w = summary_rows(rep("-s", "func", "--tid", str(worker)))
    check(w == [(3, "step"), (1, "work"), (1, "worker")], "--tid worker: %s" % w)
    both = summary_rows(rep("-s", "func", "--tid", "%d,%d" % (pid, worker)))
    check(both == [(1, "main"), (5, "step"), (2, "work"), (1, "worker")], "--tid both %s" % both)
    check(summary_rows(rep("-s", "func", "--pid", str(pid))) ==
          summary_rows(rep("-s", "func")), "--pid of the only process")
    check(summary_rows(rep("-s", "func", "--pid", "1")) == [], "--pid 1")
    # the text and JSON formats select too
    text = rep("--tid", str(worker), "--no-header")
    check("worker()" in text and "main()" not in text, "text --tid:\n" + text)
    e2e.check_json(rep("--format", "json", "--tid", str(pid)))


def case_usage():
    record([tracee("nest")])
    for args, msg in ((("-s", "bogus"), "unknown sort key"), (("--tid", "x"), "--tid"),
                      (("-t", "5 parsecs"), "a time is"), (("-D", "0"), "a depth"),
                      (("-t", "1us"), "-t and -D apply"), (("--format", "xml"), "unknown format"),
                      (("--format", "json", "--summary"), "leave out --format"),
                      (("--format", "trace-cmd",), "add -o"),
                      (("--demangle", "odd"), "simple, full or no")):
        rc, _, err = usft("report", "-i", "trace.dat", *args)
        check(rc == 2 and msg in err, "%s: rc %d: %s" % (args, rc, err))


def case_cxxnames():
    record([tracee("cxxnames")])
    names = [n for _, n in summary_rows(rep("-s", "func"))]
    golden("views_cxxnames", "".join(n + "\n" for n in names))
    raw = [n for _, n in summary_rows(rep("-s", "func", "--no-demangle"))]
    check(all(n == "main" or n.startswith("_Z") for n in raw), "--no-demangle: %s" % raw)
    full = [n for _, n in summary_rows(rep("-s", "func", "--demangle", "full"))]
    check("geo::Shape::scale(int, int)" in full and "geo::Shape::area() const" in full,
          "--demangle full: %s" % full)
    # the text report and JSON are demangled too
    text = rep("--no-header")
    check("geo::Shape::operator==() {" in text, "text:\n" + text)
    doc, _ = e2e.check_json(rep("--format", "json"))
    check(any(ev.get("name") == "geo::twice<int>" for ev in doc["traceEvents"]), "json names")
    # -l / -g globs match the demangled names, with or without parameters
    record([tracee("cxxnames")], extra=("-l", "geo::Shape::*"), out="l.dat")
    sel = sorted(set(n for _, n in summary_rows(rep("-s", "func", inp="l.dat"))))
    check(sel == ["geo::Shape::area", "geo::Shape::operator==", "geo::Shape::scale"],
          "-l 'geo::Shape::*': %s" % sel)
    record([tracee("cxxnames")], extra=("-l", "geo::Shape::scale(int)"), out="l2.dat")
    sel = summary_rows(rep("-s", "func", inp="l2.dat"))
    check(sel == [(1, "geo::Shape::scale")], "-l 'geo::Shape::scale(int)': %s" % sel)
    record([tracee("cxxnames")], "function", extra=("-n", "geo::*"), out="n.dat")
    sel = sorted(set(n for _, n in summary_rows(rep("-s", "func", inp="n.dat"))))
    check(sel == ["(anonymous namespace)::hidden", "main", "main::{lambda(int)#1}::operator()"],
          "-n 'geo::*': %s" % sel)
    record([tracee("cxxnames")], extra=("-g", "*hidden"), out="g.dat")
    sel = [n for _, n in summary_rows(rep("-s", "func", inp="g.dat"))]
    check(sel == ["(anonymous namespace)::hidden", "geo::twice<int>"], "-g '*hidden': %s" % sel)


def trace_cmd_events(path):
    """[(pid, event, text)] of `trace-cmd report FILE`: text is the call column of
    function_graph lines (after the duration's '|') or the function's name"""
    rc, out, err = e2e.run(["trace-cmd", "report", path])
    check(rc == 0, "trace-cmd report %s: %d\n%s" % (path, rc, err))
    check("Cannot" not in err and "Error" not in err, "trace-cmd report warns:\n" + err)
    evs = []
    for line in out.splitlines():
        m = re.match(r"^\s*(.*)-(\d+)\s+\[\d+\]\s+\d+\.\d+: (\w+):\s+(.*)$", line)
        if not m:
            check(line.startswith("cpus=") or not line.strip(), "trace-cmd line %r" % line)
            continue
        text = m.group(4)
        if "|" in text:
            text = text.split("|", 1)[1]
        evs.append((int(m.group(2)), m.group(3), text.rstrip()))
    return evs


def case_tracecmd():
    record([tracee("nest")])
    rc, _, err = usft("report", "-i", "trace.dat", "--format", "trace-cmd", "-o", "nest.tc.dat")
    check(rc == 0 and not err, "--format trace-cmd: %d %s" % (rc, err))
    evs = trace_cmd_events(e2e.os.path.join(e2e.ARGS.work, "nest.tc.dat"))
    golden("views_tracecmd_graph", "".join("%s %s\n" % (ev, text) for _, ev, text in evs))
    # the function tracer: the same functions in the same order as usft's own report
    record([tracee("threads")], "function", out="fn.dat")
    rc, _, err = usft("report", "-i", "fn.dat", "--format", "trace-cmd", "-o", "fn.tc.dat")
    check(rc == 0, "--format trace-cmd (function): %s" % err)
    evs = trace_cmd_events(e2e.os.path.join(e2e.ARGS.work, "fn.tc.dat"))
    mine = []
    for line in rep("--no-header", inp="fn.dat").splitlines():
        m = re.match(r"^\s*.*-(\d+)\s+\[\d+\]\s+[\d.]+: (\S+) <-", line)
        check(m, "usft report line %r" % line)
        mine.append((int(m.group(1)), m.group(2)))
    check(all(ev == "function" for _, ev, _ in evs), "events: %s" % set(e for _, e, _ in evs))
    check(sorted(mine) == sorted((p, t.strip()) for p, _, t in evs),
          "trace-cmd's functions differ:\n%s\n%s" % (mine, evs))
    # per thread the order is the recorded one
    for tid in set(p for p, _ in mine):
        a = [n for p, n in mine if p == tid]
        b = [t.strip() for p, _, t in evs if p == tid]
        check(a == b, "thread %d: %s vs %s" % (tid, a, b))
    # C++ names keep their demangled form
    record([tracee("cxxnames")], out="cxx.dat")
    rc, _, err = usft("report", "-i", "cxx.dat", "--format", "trace-cmd", "-o", "cxx.tc.dat")
    names = [t for _, _, t in trace_cmd_events(e2e.os.path.join(e2e.ARGS.work, "cxx.tc.dat"))]
    check(any("geo::Shape::operator==() {" in n for n in names), "cxx names: %s" % names)
    # stack traces are the kernel's ftrace:kernel_stack: trace-cmd prints their frames
    record([tracee("nest-fp")], "function", ("--trigger", "leaf:stacktrace:1"), out="st.dat")
    rc, _, err = usft("report", "-i", "st.dat", "--format", "trace-cmd", "-o", "st.tc.dat")
    check(rc == 0 and not err, "--format trace-cmd (stacks): %d %s" % (rc, err))
    rc, out, err = e2e.run(["trace-cmd", "report", e2e.os.path.join(e2e.ARGS.work, "st.tc.dat")])
    check(rc == 0 and "Cannot" not in err and "Error" not in err, "trace-cmd report: %s" % err)
    ls = out.splitlines()
    at = [i for i, l in enumerate(ls) if re.search(r"\bkernel_stack:\s+<stack trace >$", l)]
    check(len(at) == 1, "one kernel_stack event:\n%s" % out)
    frames = []
    for l in ls[at[0] + 1:]:
        m = re.match(r"^=> (\S+) \([0-9a-f]+\)$", l)
        if not m:
            break
        frames.append(m.group(1).split("+")[0])
    check(frames[:4] == ["leaf", "middle", "outer", "main"], "kernel_stack frames: %s" % frames)
    # -o is required, and must be a file that can be seeked
    rc, _, err = usft("report", "-i", "trace.dat", "--format", "trace-cmd", "-o", "/dev/null")
    check(rc == 1 and "regular file" in err, "-o /dev/null: %d %s" % (rc, err))


def case_tracecmd_efbig():
    """libtracecmd 3.1 keeps a CPU's part of a trace.dat in an int: past
    2047 MiB it fails after copying it.  usft says so before the copy, names
    the way out (--tid, --pid), and leaves -o as it was.  One thread pinned
    to CPU 0 makes a part of about 2.3 GB (85 M function events); it needs
    about 5 GB of disk in the work directory (TMPDIR there), else skips."""
    import os
    work = e2e.ARGS.work
    st = os.statvfs(work)
    if st.f_bavail * st.f_frsize < (8 << 30):
        print("SKIP e2e_views_tracecmd_efbig: less than 8 GiB free in %s" % work)
        raise SystemExit(77)
    big, out = os.path.join(work, "big.dat"), os.path.join(work, "big.tc.dat")
    rc, _, err = e2e.run(["taskset", "-c", "0", e2e.ARGS.usft, "record", "-p", "function",
                          "-o", big, "--", tracee("loop"), "85000000"], timeout=300)
    check(rc == 0 and "85000001 events, 0 lost" in err, "record: %d %s" % (rc, err))
    with open(out, "w") as f:
        f.write("kept\n")
    before = set(os.listdir(work))
    try:
        rc, _, err = usft("report", "-i", big, "--format", "trace-cmd", "-o", out,
                          env={"TMPDIR": work}, timeout=300)
    finally:
        os.unlink(big)
    check(rc == 1 and "writes at most 2047 MiB per CPU" in err and "--tid" in err,
          "a CPU part over 2 GiB: %d %s" % (rc, err))
    with open(out) as f:
        check(f.read() == "kept\n", "-o was changed by a refused conversion")
    left = set(os.listdir(work)) - before
    check(not left, "left behind: %s" % left)


CASES = {k[5:]: v for k, v in globals().items() if k.startswith("case_")}


def main():
    e2e.CASES = CASES
    return e2e.main()


if __name__ == "__main__":
    sys.exit(main())
