#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end test of __trace_puts() / trace_printk(): text into the trace
(docs/kernel-samples.md, docs/report.md) on samples/tracee/printk.c.

printk.py CASE --usft PATH --tracees DIR --work DIR
  record   alone, no trace takes the text (0); under `usft record` it is in
           the file: the kernel's "func: text" under the function tracer, a
           comment at the open call's indent under function_graph, a print
           instant in the JSON, ftrace:print in a trace-cmd file (long text
           in the ring buffer's long event form)
  tracefs  under `usft mount`: in `trace` with the kernel's line, as a graph
           comment, and not with options/trace_printk off
Never asserts a time.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import harness
from harness import ARGS, Fail, check, mounted, tracee

LONG = "".join(chr(ord("a") + i % 26) for i in range(300)) + "<end>"


def run(cmd):
    """@cmd in the work directory; Return: its stdout (failing the case on a non-zero exit)"""
    rc, out, err = harness.run(cmd, timeout=120)
    check(rc == 0, "%s failed (%d): %s" % (" ".join(cmd), rc, err[-500:]))
    return out


def case_record():
    out = run([tracee("printk")])
    check(out.strip() == "ret 0 0 0 0", "alone, a trace took the text: %r" % out)

    dat = os.path.join(ARGS.work, "graph.dat")
    run([ARGS.usft, "record", "-p", "function_graph", "-o", dat, tracee("printk")])
    text = run([ARGS.usft, "report", "-i", dat])
    lines = [l.split("|", 2)[-1] for l in text.splitlines() if "|" in l and not l.startswith("#")]
    body = [l[2:] for l in lines]  # after the duration column's "|  "
    want = ["main() {", "/* outermost */", "  printk_outer() {", "    printk_inner() {",
            "      /* hello from inner */", "    } /* printk_inner */", "    on_usr1() {",
            "      /* from a handler */", "    } /* on_usr1 */", "    printk_long() {",
            "      /* %s */" % LONG, "    } /* printk_long */", "  } /* printk_outer */"]
    got = [b for b in body if b.strip()][:len(want)]
    check(got == want, "function_graph report:\n%s\nwanted:\n%s" % ("\n".join(got), "\n".join(want)))

    dat = os.path.join(ARGS.work, "func.dat")
    run([ARGS.usft, "record", "-p", "function", "-o", dat, tracee("printk")])
    text = run([ARGS.usft, "report", "-i", dat])
    prints = re.findall(r"\d+\.\d+: (\w+): (.*)$", text, re.M)
    prints = [p for p in prints if not p[1].startswith("<-") and " <-" not in p[1]]
    check(prints == [("main", "outermost"), ("printk_inner", "hello from inner"),
                     ("on_usr1", "from a handler"), ("printk_long", LONG)],
          "function report's print lines: %r" % prints)

    js = run([ARGS.usft, "report", "-i", dat, "-F", "json"])
    check('"cat":"print","name":"hello from inner","args":{"ip":"printk_inner"}' in js,
          "no print instant in the JSON")

    if shutil.which("trace-cmd"):
        tc = os.path.join(ARGS.work, "func.tc.dat")
        run([ARGS.usft, "report", "-i", dat, "-F", "trace-cmd", "-o", tc])
        rep = run(["trace-cmd", "report", tc])
        check(re.search(r"print: +printk_inner: hello from inner", rep), "trace-cmd: " + rep[-800:])
        check(re.search(r"print: +printk_long: " + LONG, rep), "trace-cmd, long text: " + rep[-800:])


def wait_text(path, pred, what):
    for _ in range(200):
        with open(path) as f:
            t = f.read()
        if pred(t):
            return t
        time.sleep(0.05)
    raise Fail("never: %s; %s:\n%s" % (what, path, t[-1500:]))


def case_tracefs():
    p = subprocess.Popen([tracee("printk"), "serve"], env=harness.env(), cwd=ARGS.work,
                         stdout=subprocess.PIPE)
    d = os.path.join(ARGS.work, "m")
    try:
        check(p.stdout.readline().decode().startswith("ready"), "tracee did not start")
        os.makedirs(d, exist_ok=True)
        run([ARGS.usft, "mount", str(p.pid), d])

        def put(name, text):
            with open(os.path.join(d, name), "w") as f:
                f.write(text)

        trace = os.path.join(d, "trace")
        # nop tracer: the kernel's print line, "func: text"
        t = wait_text(trace, lambda t: "printk_inner: hello from inner" in t, "a print line")
        check(re.search(r"tracee-printk-\d+ +\[\d+\] \S+ +\d+\.\d+: printk_inner: hello from inner",
                        t), "print line format:\n" + t[-800:])
        check("printk_long: " + LONG in t, "long text in trace")
        put("current_tracer", "function_graph")
        put("trace", "")
        t = wait_text(trace, lambda t: "/* hello from inner */" in t and "printk_inner() {" in t,
                     "a graph comment")
        ent = [l for l in t.splitlines() if "printk_inner() {" in l][0]
        com = [l for l in t.splitlines() if "/* hello from inner */" in l][0]
        check(com.index("/*") == ent.index("printk_inner") + 2,
              "comment not indented below its call:\n%s\n%s" % (ent, com))
        put("current_tracer", "nop")
        put("options/trace_printk", "0")
        put("trace", "")
        time.sleep(0.3)
        with open(trace) as f:
            t = f.read()
        check("hello from inner" not in t, "options/trace_printk 0 still records:\n" + t[-500:])
        put("options/trace_printk", "1")
        wait_text(trace, lambda t: "hello from inner" in t, "print lines again")
    finally:
        if mounted(d):
            subprocess.run(["fusermount3", "-u", d])
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
    check(p.returncode == 0, "tracee-printk exit %s" % p.returncode)


def no_fuse():
    if ARGS.case == "tracefs" and (os.geteuid() != 0 or not os.path.exists("/dev/fuse")):
        return "needs root and /dev/fuse"
    return None


CASES = {"record": case_record, "tracefs": case_tracefs}

if __name__ == "__main__":
    sys.exit(harness.main(CASES, "printk_", skip=no_fuse, ok="PASS"))
