#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of `usft` and the preload shim on samples/tracee.

One ctest test per case: e2e.py CASE --usft PATH --tracees DIR --golden DIR
--work DIR.  Every traced run is checked for:
  - the program's own stdout, stderr (minus usft's lines) and exit status
    byte-identical to an untraced run;
  - the call tree (names and nesting only, never times) equal to
    golden/CASE.txt (--update rewrites the golden files);
  - `usft report --format json` parsing (json.loads, as python3 -m json.tool)
    with B/E events properly nested per thread.
"""
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import ARGS, Fail, check, run, tracee, usft  # noqa: E402,F401


def without_usft_lines(text):
    return "".join(l for l in text.splitlines(True) if not l.startswith("usft:"))


def record(prog_args, tracer="function_graph", extra=(), out="trace.dat", env=None):
    """Run untraced and traced; compare what the program itself printed."""
    rc0, out0, err0 = run(prog_args, env=env)
    rc1, out1, err1 = usft("record", "-p", tracer, "-o", out, *extra, "--", *prog_args,
                           env=env)
    check(rc1 == rc0, "exit status %d traced vs %d untraced\n%s" % (rc1, rc0, err1))
    check(out1 == out0, "stdout differs:\n--- untraced\n%s--- traced\n%s" % (out0, out1))
    check(without_usft_lines(err1) == err0,
          "stderr differs:\n--- untraced\n%s--- traced\n%s" % (err0, err1))
    m = re.search(r"usft: (\d+) events, (\d+) lost, (\d+) process", err1)
    check(m, "no summary line on stderr:\n" + err1)
    return {"events": int(m.group(1)), "lost": int(m.group(2)),
            "processes": int(m.group(3)), "stderr": err1, "stdout": out1}


def report(fmt="text", inp="trace.dat", extra=()):
    rc, out, err = usft("report", "-i", inp, "--format", fmt, *extra)
    check(rc == 0, "usft report failed (%d): %s" % (rc, err))
    return out


# ---- call trees --------------------------------------------------------------

LINE = re.compile(r"^\s*\d+\)\s+(\S.*?)\s+\|\s([^|]*)\|  (.*)$")


def graph_trees(text):
    """{(pid-order, tid): [lines]} from function_graph text: names and nesting."""
    threads = {}
    order = []
    for line in text.splitlines():
        if line.startswith("#") or not line.strip() or line.startswith(" ---"):
            continue
        m = LINE.match(line)
        if not m:
            continue        # task-switch banners, LOST markers
        proc, call = m.group(1), m.group(3)
        comm, tid = proc.rsplit("-", 1)
        call = re.sub(r"0x[0-9a-f]+", "0x?", call)
        key = (comm, int(tid))      # exec: same tid, new image
        if key not in threads:
            threads[key] = []
            order.append(key)
        threads[key].append(call.rstrip())
    return threads, order


def canonical(text, sessions=None):
    """Threads in a stable order: first appearance, except that threads whose
    trees are the same kind (all but the first of a process) are sorted."""
    threads, order = graph_trees(text)
    first = order[:1]
    rest = sorted(order[1:], key=lambda k: "\n".join(threads[k]))
    out = []
    for i, k in enumerate(first + rest):
        out.append("== thread %d" % i)
        out.extend(threads[k])
    return "\n".join(out) + "\n"


def canonical_by_order(text):
    threads, order = graph_trees(text)
    out = []
    for i, k in enumerate(order):
        out.append("== thread %d" % i)
        out.extend(threads[k])
    return "\n".join(out) + "\n"


def golden(case, actual):
    path = os.path.join(ARGS.golden, case + ".txt")
    if ARGS.update:
        with open(path, "w") as f:
            f.write(actual)
        return
    check(os.path.exists(path), "no golden file %s; actual:\n%s" % (path, actual))
    with open(path) as f:
        want = f.read()
    if want != actual:
        import difflib
        diff = "".join(difflib.unified_diff(want.splitlines(True), actual.splitlines(True),
                                            "golden", "actual"))
        raise Fail("call tree differs from %s:\n%s" % (path, diff))


def check_json(text, want_tracer=None):
    doc = json.loads(text)
    check(isinstance(doc.get("traceEvents"), list), "no traceEvents array")
    if want_tracer:
        check(doc["otherData"]["tracer"] == want_tracer, "tracer %s" % doc["otherData"])
    stacks = {}
    last = {}
    nb = 0
    for ev in doc["traceEvents"]:
        ph = ev["ph"]
        if ph == "M":
            continue
        key = (ev["pid"], ev["tid"])
        ts = float(ev["ts"])
        check(ts >= last.get(key, 0.0), "time goes back on %s: %s" % (key, ev))
        last[key] = ts
        st = stacks.setdefault(key, [])
        if ph == "B":
            st.append(ev["name"])
            nb += 1
        elif ph == "E":
            check(st and st[-1] == ev["name"],
                  "E %s does not close %s on %s" % (ev["name"], st[-1:] or "nothing", key))
            st.pop()
    for key, st in stacks.items():
        check(not st, "unclosed B events on %s: %s" % (key, st))
    return doc, nb


def json_tool(extra=()):
    """usft report -o FILE --format json, then python3 -m json.tool FILE."""
    rc, _, err = usft("report", "-i", "trace.dat", "--format", "json", "-o", "trace.json", *extra)
    check(rc == 0, "report -o trace.json: %s" % err)
    rc, _, err = run([sys.executable, "-m", "json.tool", "trace.json"])
    check(rc == 0, "python3 -m json.tool: %s" % err)


def graph_case(case, prog, extra=(), canon=canonical):
    r = record([tracee(prog)], "function_graph", extra)
    check(r["lost"] == 0, "lost events: %d" % r["lost"])
    golden(case, canon(report("text")))
    check_json(report("json"), "function_graph")
    json_tool()
    return r


# ---- cases -------------------------------------------------------------------

def case_graph_nest():
    r = graph_case("graph_nest", "nest")
    check(r["events"] == 24, "events %d" % r["events"])


def case_function_nest():
    r = record([tracee("nest")], "function")
    check(r["events"] == 12 and r["lost"] == 0, "events %d lost %d" % (r["events"], r["lost"]))
    lines = []
    for line in report("text").splitlines():
        if line.startswith("#"):
            continue
        m = re.match(r"^\s*(\S+)-(\d+)\s+\[(\d+)\]\s+(\d+)\.(\d{6}): (\S+) <-(\S+)$", line)
        check(m, "not a function tracer line: %r" % line)
        lines.append("%s <-%s" % (m.group(6), re.sub(r"\+?0x[0-9a-f]+", "+0x?", m.group(7))))
    golden("function_nest", "\n".join(lines) + "\n")
    doc, _ = check_json(report("json"), "function")
    names = [e["name"] for e in doc["traceEvents"] if e["ph"] == "i"]
    check(names[:3] == ["main", "outer", "middle"], "json instants %s" % names)


def case_profile_nest():
    record([tracee("nest")], "profile")
    hits = {}
    for line in report("text").splitlines():
        m = re.match(r"^  (\S+)\s+(\d+)\s+[\d.]+ us", line)
        if m and m.group(1) != "Function":
            hits[m.group(1)] = int(m.group(2))
    want = {"main": 1, "outer": 1, "middle": 1, "leaf": 2, "fact": 5, "tail_caller": 1,
            "tail_callee": 1}
    check(hits == want, "profile hits %s, want %s" % (hits, want))
    doc = json.loads(report("json"))
    # a "profile" track of slices (Perfetto), one per function, heaviest first
    slices = [ev for ev in doc["traceEvents"] if ev["ph"] == "X" and ev["cat"] == "profile"]
    prof = {ev["name"]: ev["args"]["hits"] for ev in slices}
    check(prof == want, "json profile %s" % prof)
    durs = [float(ev["dur"]) for ev in slices]
    check(durs == sorted(durs, reverse=True), "profile slices not heaviest first: %s" % durs)
    check(all(float(slices[i]["ts"]) + durs[i] == float(slices[i + 1]["ts"]) or
              abs(float(slices[i]["ts"]) + durs[i] - float(slices[i + 1]["ts"])) < 0.002
              for i in range(len(slices) - 1)), "profile slices overlap")
    check(any(ev["ph"] == "M" and ev["args"]["name"] == "profile" for ev in doc["traceEvents"]),
          "no profile track name")


def case_threads():
    graph_case("threads", "threads")


def case_slots():
    """Thread churn with fewer ring slots than threads: every call is either
    recorded or counted as lost, none vanishes."""
    prog = [tracee("threads"), "churn"]
    full = record(prog, "function")
    check(full["lost"] == 0, "lost with 256 slots: %d" % full["lost"])
    # 200 workers x (worker + work + 3 step) + main
    check(full["events"] == 200 * 5 + 1, "events %d" % full["events"])
    few = record(prog, "function", env={"USFT_MAX_THREADS": "4"})
    check(few["events"] + few["lost"] == full["events"],
          "4 slots: events %d + lost %d != %d" % (few["events"], few["lost"], full["events"]))


def case_signals():
    graph_case("signals", "signals")


def case_jump():
    graph_case("jump", "jump")


def case_dlopen():
    graph_case("dlopen", "dlopen")
    # and the function tracer names the plugin's functions after dlclose
    record([tracee("dlopen")], "function")
    text = report("text")
    check("plugin_helper <-plugin_entry" in text, "plugin calls not named:\n" + text)


def case_reload():
    """dlopen A, dlclose A, dlopen B where A was: B's functions carry B's
    names, A's keep A's."""
    r = graph_case("reload", "reload")
    check("same address: yes" in r["stdout"],
          "the second library did not land where the first was:\n" + r["stdout"])
    record([tracee("reload")], "function")
    text = report("text")
    for want in ("a_helper <-a_entry", "b_entry <-call_lib", "b_helper <-b_entry"):
        check(want in text, "%r missing:\n%s" % (want, text))


def case_spawn():
    """Children started with an environment of their own (posix_spawn,
    posix_spawnp, execve and execle with an envp without usft's variables)
    are traced too."""
    r = graph_case("spawn", "spawn", canon=canonical_by_order)
    # the parent, 2 spawned children, 2 forked children and their new images
    check(r["processes"] == 7, "processes %d" % r["processes"])


def case_daemon():
    """daemon(): the parent's events (it leaves through glibc's own _exit)
    are kept, and `usft record` records until the daemon child is done."""
    r = graph_case("daemon", "daemon", canon=canonical_by_order)
    check(r["processes"] == 2, "processes %d" % r["processes"])
    check("left processes running" in r["stderr"], "no word of the daemon:\n" + r["stderr"])
    check(r["events"] == 6, "events %d" % r["events"])
    # a process left running for good: Ctrl-C stops the wait, not the record
    e = {k: v for k, v in os.environ.items() if not k.startswith("USFT_") and k != "LD_PRELOAD"}
    p = subprocess.Popen([ARGS.usft, "record", "-o", "left.dat", "--", "sh", "-c",
                          "sleep 60 </dev/null >/dev/null 2>&1 & echo $!"], cwd=ARGS.work, env=e,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sleeper = int(p.stdout.readline())
    try:
        err = p.stderr.readline()
        check("left processes running" in err, "no word of the process left: %r" % err)
        p.send_signal(signal.SIGINT)
        rc = p.wait(timeout=60)
        err = p.stderr.read()
        check(rc == 0 and "stopped waiting" in err, "after Ctrl-C: %d %r" % (rc, err))
    finally:
        os.kill(sleeper, signal.SIGKILL)
        p.kill()


def case_ucontext():
    """Coroutines: makecontext()/swapcontext() with the coroutine's stack in
    main()'s frame, two yields and a return through uc_link.  Then a stack
    switch by hand-written assembly: frames may be lost, with a note, but
    the program runs as untraced."""
    graph_case("ucontext", "ucontext")
    r = record([tracee("ucontext"), "asm"], "function_graph")
    check(r["lost"] == 0, "lost events: %d" % r["lost"])
    check("stack switch usft does not see" in r["stderr"], "no note:\n" + r["stderr"])
    golden("ucontext_asm", canonical(report("text")))
    check_json(report("json"), "function_graph")
    # coroutines that end give their shadow stacks back (the pool has 4096)
    r = record([tracee("ucontext"), "churn"], "function_graph")
    n = sum(1 for l in report("text").splitlines() if l.endswith("co_leaf();"))
    check(n == 5000 and r["lost"] == 0, "churn: %d co_leaf calls recorded, %d lost" % (n, r["lost"]))


def case_fork():
    r = graph_case("fork", "fork", canon=canonical_by_order)
    check(r["processes"] == 3, "processes %d" % r["processes"])


def case_mathvar():
    graph_case("mathvar", "mathvar")
    record([tracee("mathvar")], "function")
    record([tracee("mathvar")], "profile")


def case_exec():
    r = graph_case("exec", "exec", canon=canonical_by_order)
    check(r["processes"] == 2, "processes %d" % r["processes"])


def case_thread_exec():
    """exec from a thread that is not the main one: the main thread's
    kept-back main() entry still reaches the trace."""
    r = graph_case("thread_exec", "thread_exec", canon=canonical_by_order)
    check(r["processes"] == 2, "processes %d" % r["processes"])


def case_pthread_exit():
    graph_case("pthread_exit", "pthread_exit")


def case_selfcalls():
    """usft's own calls (its allocations in a forked child, in its writer
    thread, at start and stop) reach the program's own malloc() family and
    must never be recorded."""
    r = graph_case("selfcalls", "selfcalls", canon=canonical_by_order)
    check(r["processes"] == 2, "processes %d" % r["processes"])
    check("usft-writer" not in report("text"), "the writer thread was traced")
    record([tracee("selfcalls")], "function")
    for line in report("text").splitlines():
        if line.startswith("#"):
            continue
        caller = line.rsplit(" <-", 1)[-1]
        check(not re.match(r"(usft|libusft|atfork|write_session|sym_lookup|task_index|"
                           r"pthread_create|ld-linux)", caller) and "usft-writer" not in line,
              "a call usft made was recorded: %r" % line)


def case_exceptions():
    graph_case("exceptions", "exceptions", extra=("-l", "t_*"))


def case_filters():
    r = record([tracee("nest")], "function", ("-l", "leaf", "-l", "mid*"))
    names = [l.split(": ", 1)[1] for l in report("text").splitlines() if not l.startswith("#")]
    check(names == ["middle <-outer", "leaf <-middle", "leaf <-middle"], "-l: %s" % names)
    record([tracee("nest")], "function", ("-n", "fact", "-n", "leaf"))
    names = [l.split(": ", 1)[1].split()[0] for l in report("text").splitlines()
             if not l.startswith("#")]
    check("fact" not in names and "leaf" not in names and "middle" in names, "-n: %s" % names)
    # a glob that matches nothing is reported, not fatal
    r = record([tracee("nest")], "function", ("-l", "leaf", "-l", "no_such_fn*"))
    check("no_such_fn*" in r["stderr"], "unmatched glob not reported:\n" + r["stderr"])
    check(r["events"] == 2, "events %d" % r["events"])
    # only globs that match nothing: nothing is traced
    r = record([tracee("nest")], "function", ("-l", "no_such_fn*"))
    check(r["events"] == 0, "events %d" % r["events"])


def case_graph_function():
    graph_case("graph_function", "nest", extra=("-g", "middle", "-g", "tail_caller"))
    # set_graph_function syntax: globs, and '!' removes whatever the order
    graph_case("graph_function", "nest", extra=("-g", "mid*", "-g", "tail_c*", "-g", "!tail_callee"))
    graph_case("graph_function", "nest", extra=("-g", "!*callee !outer", "-g", "*ddle tail_*"))


def case_graph_notrace():
    """-N (set_graph_notrace): the function and its whole subtree are left
    out (fact's recursion below the first fact too); with -g, inside it."""
    graph_case("graph_notrace", "nest", extra=("-N", "middle", "-N", "fact"))
    rc, info, err = usft("info", "-i", "trace.dat")
    check(rc == 0 and "# graph notrace -N : middle fact" in info, "usft info: %d %r" % (rc, info))
    graph_case("graph_notrace", "nest", extra=("-N", "mid* fac*", "-N", "lea*", "-N", "!leaf"))
    r = record([tracee("nest")], "function_graph", ("-g", "outer", "-N", "leaf"))
    text = canonical(report("text"))
    check("middle();" in text and "leaf" not in text, "-g outer -N leaf:\n" + text)


def case_max_depth():
    graph_case("max_depth", "nest", extra=("--max-graph-depth", "2"))


def case_args():
    """-A/-R (uftrace's syntax) and --funcgraph-retval on tracee-args: the
    values each DWARF type shows as, strings read safely (escaped, cut,
    NULL, a pointer that cannot be read), and what a bad spec is told."""
    extra = ("-A", "a_*@args", "-R", "a_*@retval", "-A", "a_even@arg1/x")
    r = record([tracee("args")], "function_graph", extra)
    check(r["lost"] == 0, "lost events: %d" % r["lost"])
    text = report("text")
    golden("args", canonical(text))
    check("a_peek(0x10, 0) = 0;" in text, "the unreadable pointer: %s" % text)
    doc, _ = check_json(report("json"), "function_graph")
    got = {}
    for e in doc["traceEvents"]:
        if e.get("name") == "a_scale" and "args" in e:
            got[e["ph"]] = e["args"]
    check(got == {"B": {"args": "1.5, 3, 0.25"}, "E": {"retval": "4.75"}},
          "json args of a_scale: %s" % got)
    # the values stream with their events: what the loading reader shows, from a pipe too
    for fmt in ("text", "json"):
        rc, loaded, _ = usft("report", "-i", "trace.dat", "--format", fmt,
                             env={"USFT_REPORT_LOAD": "1"})
        check(rc == 0 and loaded == report(fmt), "%s: streamed and loaded values differ" % fmt)
        with open(os.path.join(ARGS.work, "trace.dat"), "rb") as f:
            piped = subprocess.run([ARGS.usft, "report", "-i", "/dev/stdin", "--format", fmt],
                                   stdin=f, capture_output=True, cwd=ARGS.work,
                                   env=harness.env()).stdout.decode()
        check(piped == loaded, "%s: a piped trace's report differs" % fmt)
    r = record([tracee("args")], "function_graph", ("--funcgraph-retval",))
    golden("args_retval", canonical(report("text")))
    check("a_fail(); /* = -22 */" in report("text"), "funcgraph-retval errno")
    # what a user is told
    for spec, want in (("a_add@arg3", "takes 2 arguments"), ("a_add@arg1/q", "unknown format"),
                       ("a_add@bogus", "is not argN"), ("zz_none@arg1", "no patchable function")):
        rc, out, err = usft("record", "-p", "function_graph", "-o", "bad.dat", "-A", spec, "--",
                            tracee("args"))
        check(rc == 0 and want in err and "sum " in out, "-A %s: %d %r" % (spec, rc, err))
    rc, out, err = usft("record", "-A", "a_add@arg1", "--", tracee("args"))
    check(rc == 2 and "-p function_graph" in err, "-A without function_graph: %d %r" % (rc, err))
    rc, out, err = usft("record", "-p", "function_graph", "-R", "a_add", "--", tracee("args"))
    check(rc == 2 and "FUNC@VAL" in err, "-R without @: %d %r" % (rc, err))


def case_triggers():
    """--trigger: the kernel's set_ftrace_filter commands on the recording:
    middle:traceoff stops it (middle's own entry is not recorded), fact:traceon
    starts it again; a bad trigger is said and the program runs on."""
    graph_case("triggers", "nest", extra=("--trigger", "middle:traceoff",
                                          "--trigger", "fact:traceon:1"))
    rc, out, err = usft("record", "-p", "function_graph", "-o", "bad.dat", "--trigger",
                        "middle:bogus", "--", tracee("nest"))
    check(rc == 0 and "--trigger middle:bogus: Invalid argument" in err,
          "a bad trigger: %d %r" % (rc, err))
    rc, out, err = usft("record", "--trigger", "middle", "--", tracee("nest"))
    check(rc == 2 and "FUNC:traceoff" in err, "--trigger without a command: %d %r" % (rc, err))


def stack_blocks(text):
    """The stack traces of a text report, names only (offsets and libc cut):
    one line per stack, its frames up to main."""
    out, cur = [], None
    for line in text.splitlines():
        if "<stack trace>" in line:
            cur = []
            out.append(cur)
        elif cur is not None and line.startswith(" => "):
            name = line[4:].split("+")[0]
            if not cur or cur[-1] != "main":
                cur.append(name)
        else:
            cur = None
    return "".join(" => ".join(b) + "\n" for b in out)


def case_stacktrace():
    """--trigger FUNC:stacktrace[:N]: a stack trace per call (N at most) from
    the traced function up through its callers, past usft's trampoline, in the
    text report (function and function_graph) and the JSON."""
    prog = [tracee("nest-fp")]
    r = record(prog, "function", ("--trigger", "leaf:stacktrace", "--trigger",
                                  "fact:stacktrace:2"))
    check(r["lost"] == 0, "lost %d" % r["lost"])
    golden("stacktrace", stack_blocks(report("text")))
    doc = json.loads(report("json"))
    stacks = [e for e in doc["traceEvents"] if e.get("cat") == "stack"]
    check(len(stacks) == 4 and stacks[0]["args"]["function"] == "leaf" and
          [f.split("+")[0] for f in stacks[0]["args"]["frames"][:4]] ==
          ["leaf", "middle", "outer", "main"], "JSON stacks: %r" % stacks[:1])
    record(prog, "function_graph", ("--trigger", "leaf:stacktrace:1"))
    text = report("text")
    check(stack_blocks(text) == "leaf => middle => outer => main\n" and "/* <stack trace>" in text,
          "function_graph stack:\n" + text)


def case_triggers_uftrace():
    """-T in uftrace's syntax: FUNC@depth=N (FUNC and N - 1 levels below it,
    whatever -D says), FUNC@trace_off / FUNC@traceon, FUNC@finish (the
    recording ends there: FUNC's own call is not in it, the program runs on);
    unsupported or misplaced actions are refused before the program runs."""
    graph_case("triggers_depth", "nest", extra=("-T", "outer@depth=2", "-T", "tail_caller@depth=1",
                                                "--max-graph-depth", "5"))
    graph_case("triggers_onoff", "nest", extra=("-T", "fact@trace_off", "-T", "tail_caller@traceon"))
    graph_case("triggers_finish", "nest", extra=("-T", "middle@finish",))
    for bad, words in ((("-T", "fact@time=2"), "not supported"),
                       (("-T", "fact@bogus"), "unknown action"),
                       (("-T", "fact@depth=0"), "depth=N takes"),
                       (("-T", "fact@traceon,traceoff"), "at once"),
                       (("-p", "function", "-T", "fact@depth=2"), "function_graph")):
        rc, out, err = usft("record", *bad, "--", tracee("nest"))
        check(rc == 2 and words in err, "%s: %d %r" % (bad, rc, err))


def pids_with_arg(arg):
    """the processes whose command line holds @arg"""
    found = []
    for d in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                if arg.encode() in f.read().split(b"\0"):
                    found.append(int(d))
        except (OSError, ValueError):
            pass
    return found


def case_finish_returns():
    """FUNC@finish under `usft record PROG`: the recorder returns once the
    recording ended (the file complete) while the program runs on, as
    uftrace's does for a daemon: the program itself, and a daemon() child.
    (The program's output goes to files: it keeps them open.)"""
    def record_finish(trigger, out, prog_args):
        path = os.path.join(ARGS.work, out)
        with open(path + ".out", "w") as o, open(path + ".err", "w+") as e:
            try:
                rc = subprocess.run([ARGS.usft, "record", "-p", "function_graph", "-T", trigger,
                                     "-o", out, "--"] + prog_args, cwd=ARGS.work,
                                    env=harness.env(), stdout=o, stderr=e,
                                    timeout=30).returncode
            except subprocess.TimeoutExpired:
                rc = "none: still waiting for the program after 30 s"
            e.seek(0)
            return rc, e.read()

    prog = os.path.join(ARGS.work, "fin-progress")
    rc, err = record_finish("step@finish", "fin1.dat", [tracee("crash"), "loop", "0", prog])
    left = pids_with_arg(prog)
    try:
        check(rc == 0 and "recording finished" in err, "record -T step@finish: %s %s" % (rc, err))
        check(left, "the program did not run on after the finish")
        text = report("text", inp="fin1.dat")
        check("main() {" in text and "step()" not in text, "finish: the trace:\n" + text)
    finally:
        for pid in left:
            os.kill(pid, signal.SIGKILL)
    rc, err = record_finish("serve@finish", "fin2.dat", [tracee("daemon"), "serve"])
    with open(os.path.join(ARGS.work, "fin2.dat.out")) as f:
        m = re.search(r"daemon pid (\d+)", f.read())
    try:
        check(rc == 0 and "recording finished" in err,
              "record -T serve@finish of a daemon: %s %s" % (rc, err))
        check(m and os.path.exists("/proc/%s" % m.group(1)), "the daemon does not run on")
        text = report("text", inp="fin2.dat")
        check(len(re.findall(r"work\(\);", text)) == 2 and "serve" not in text,
              "finish in the daemon: the trace:\n" + text)
    finally:
        if m:
            os.kill(int(m.group(1)), signal.SIGKILL)


def case_signal_triggers():
    """--signal SIG@ACTION: the signal flips the recording, and the program's
    own handlers still run (SIGUSR2's on its alternate stack): its output is
    the same; a fault signal is refused."""
    graph_case("signal_triggers", "signals", extra=("--signal", "SIGUSR1@trace_off",
                                                    "--signal", "USR2@trace_on"))
    r = record([tracee("signals")], "function_graph", ("--signal", "SIGUSR1@finish"))
    text = report("text")
    check("raise_it() {" in text and "handler" not in text, "finish on SIGUSR1:\n" + text)
    for sig in ("SIGSEGV", "SIGKILL", "SIGNOPE"):
        rc, out, err = usft("record", "--signal", sig + "@trace_off", "--", tracee("signals"))
        check(rc == 2 and "--signal" in err, "%s: %d %r" % (sig, rc, err))


def clocksource():
    try:
        with open("/sys/devices/system/clocksource/clocksource0/current_clocksource") as f:
            return f.read().strip()
    except OSError:
        return ""


def info_clock():
    rc, out, err = usft("info", "-i", "trace.dat")
    check(rc == 0, "usft info failed (%d): %s" % (rc, err))
    m = re.search(r"^# clock +: (\S+)", out, re.M)
    check(m, "usft info names no clock:\n" + out)
    return m.group(1)


def case_clock_mono():
    """-C mono and -C pvclock record the same tree, and the file names the
    clock; pvclock, and auto's choice of it, where the kernel's clocksource
    is kvm-clock on x86-64 (else -C pvclock is refused)."""
    r = record([tracee("nest")], "function_graph", ("-C", "mono"))
    check(r["events"] == 24, "events %d" % r["events"])
    golden("graph_nest", canonical(report("text")))
    check(info_clock() == "mono", "-C mono: the file says clock %s" % info_clock())
    kvm = clocksource() == "kvm-clock" and os.uname().machine == "x86_64"
    if kvm:
        for extra in (("-C", "pvclock"), ()):
            r = record([tracee("nest")], "function_graph", extra)
            check(r["events"] == 24, "%s: events %d" % (extra, r["events"]))
            golden("graph_nest", canonical(report("text")))
            check(info_clock() == "pvclock", "%s on kvm-clock: the file says clock %s"
                  % (extra or "auto", info_clock()))
    else:
        rc, out, err = usft("record", "-C", "pvclock", "-o", "pv.dat", "--", tracee("nest"))
        check(rc == 2 and "cannot be read" in err, "-C pvclock off kvm-clock (%s): %d %r"
              % (clocksource(), rc, err))
    rc, out, err = usft("record", "-C", "bogus", "--", tracee("nest"))
    check(rc == 2 and "unknown clock" in err, "-C bogus: %d %r" % (rc, err))


def case_calls_20m():
    n = 20000000
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    r = record([tracee("loop"), str(n)], "function", out="big.dat")
    rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    # every call is either in the file or counted as lost: none vanish
    check(r["events"] + r["lost"] == n + 1,
          "events %d + lost %d != %d calls" % (r["events"], r["lost"], n + 1))
    check(rss_mb < 1024, "max RSS %.0f MB" % rss_mb)
    os.unlink(os.path.join(ARGS.work, "big.dat"))
    r = record([tracee("loop"), str(n)], "function_graph", out="big.dat")
    # a lost entry is not hooked (its return is never recorded)
    ev, lost = r["events"], r["lost"]
    check(ev + lost <= 2 * (n + 1) <= ev + 2 * lost,
          "graph: events %d lost %d for %d calls" % (ev, lost, n + 1))
    os.unlink(os.path.join(ARGS.work, "big.dat"))
    print("20M calls: function and function_graph recorded, max RSS %.0f MB (was %d kB)"
          % (rss_mb, before))


def case_full_ring():
    """A full ring waits for the writer by default (nothing lost, said in the
    summary line); --drop drops and counts, every call in the file or
    counted; the two policies together are refused."""
    n = 300000
    args = [tracee("loop"), str(n)]
    r = record(args, "function", ("-b", "16"))
    check(r["events"] == n + 1 and r["lost"] == 0,
          "default policy, 16 KiB ring: events %d lost %d for %d calls"
          % (r["events"], r["lost"], n + 1))
    check("full rings: the thread waits" in r["stderr"], "policy not named:\n" + r["stderr"])
    check("an event is a call, recorded or lost" in r["stderr"], "unit not named:\n" + r["stderr"])
    r = record(args, "function", ("-b", "16", "--drop"))
    check(r["events"] + r["lost"] == n + 1 and r["lost"] > 0,
          "--drop, 16 KiB ring: events %d + lost %d for %d calls"
          % (r["events"], r["lost"], n + 1))
    check("full rings: drop and count" in r["stderr"], "policy not named:\n" + r["stderr"])
    rc, _, err = usft("record", "--lossless", "--drop", "-o", "x.dat", "--", tracee("nest"))
    check(rc == 2 and "--lossless or --drop" in err, "both policies: rc %d %r" % (rc, err))


def case_no_writer():
    """A process whose writer thread cannot start (pthread_create() fails:
    a thread limit, a sandbox) drops and counts even under the default
    lossless policy: no producer sleeps waiting for a writer that does not
    exist, the program runs to its end with its own exit status, and every
    call is in the file or counted as lost."""
    n = 300000
    lib = os.path.join(ARGS.tracees, "libtracee-nothread.so")
    counts = os.path.join(ARGS.work, "nothread.out")
    env = {"LD_PRELOAD": lib, "NOTHREAD_OUT": counts}
    if os.path.exists(counts):
        os.unlink(counts)
    r = record([tracee("loop"), str(n)], "function", ("-b", "16"), env=env)
    check(os.path.exists(counts), "the writer thread was not refused")
    with open(counts) as f:
        lines = f.read().splitlines()
    # one line: the traced process (the only one where libusft asked for a thread)
    check(len(lines) == 1, "processes that refused a thread: %r" % lines)
    got = dict(kv.split("=") for kv in lines[0].split())
    check(int(got["sleeps"]) == 0, "a producer waited for a writer that never started: "
          "%s sleeps (nanosleep() or futex waits)" % got["sleeps"])
    check(r["events"] + r["lost"] == n + 1 and r["lost"] > 0,
          "no writer, 16 KiB ring: events %d + lost %d for %d calls"
          % (r["events"], r["lost"], n + 1))


def case_cli():
    def rc_of(*a):
        return usft(*a)[0]
    check(rc_of() == 2, "no arguments")
    check(rc_of("bogus") == 2, "unknown command")
    check(rc_of("--help") == 0 and rc_of("help", "record") == 0, "--help")
    rc, out, _ = usft("--version")
    check(rc == 0 and out.startswith("usft "), "--version: %r" % out)
    for cmd in ("record", "report", "list", "stat"):
        rc, out, _ = usft(cmd, "--help")
        check(rc == 0 and out.startswith("usage: usft " + cmd), "%s --help: %r" % (cmd, out))
    check(rc_of("record") == 2, "record without a program")
    check(rc_of("record", "-p", "bogus", "true") == 2, "unknown tracer")
    check(rc_of("record", "/nonexistent/prog") == 127, "missing program")
    noexec = os.path.join(ARGS.work, "noexec")
    with open(noexec, "w") as f:
        f.write("#!/bin/sh\n")
    os.chmod(noexec, 0o644)
    check(rc_of("record", noexec) == 126, "program not executable")
    # the program's status comes back; a program without sites records nothing
    rc, _, err = usft("record", "--", "sh", "-c", "exit 3")
    check(rc == 3, "exit status %d" % rc)
    check("nothing recorded" in err, "summary for a program without sites: " + err)
    rc, _, _ = usft("record", "--", "sh", "-c", "kill -TERM $$")
    check(rc == 128 + 15, "killed by SIGTERM: %d" % rc)
    check(rc_of("report", "-i", "/nonexistent.dat") == 1, "report of a missing file")
    check(rc_of("report", "-i", "/etc/hostname") == 1 or not os.path.exists("/etc/hostname"),
          "report of a non-trace file")
    check(rc_of("report", "--format", "xml") == 2, "unknown format")
    # default file name in the working directory
    rc, _, err = usft("record", "-q", tracee("nest"))
    check(rc == 0 and not err and os.path.exists(os.path.join(ARGS.work, "usft.dat")),
          "-q and default usft.dat: %s" % err)
    check(rc_of("report") == 0, "report of usft.dat")


def case_list():
    rc, out, err = usft("list", "-f", tracee("nest"))
    check(rc == 0, "list failed: %s" % err)
    names = set(out.split())
    for f in ("main", "outer", "middle", "leaf", "fact", "tail_caller", "tail_callee"):
        check(f in names, "%s missing from usft list:\n%s" % (f, out))
    rc, out, _ = usft("list", "-f", tracee("nest"), "f*")
    check(rc == 0 and out.split() == ["fact"], "list with a glob: %r" % out)
    rc, out, err = usft("list", "-f", "sh")
    check(rc == 0 and "no patchable functions" in err, "list of sh: %s" % err)
    check(usft("list")[0] == 2, "list without -f")


def case_messages():
    """What a user is told: a static program, a libtool wrapper script, a
    stripped program, `usft list -f` without a program."""
    static = tracee("static")
    rc, out, err = usft("record", "-o", "static.dat", static)
    check(rc == 125 and "is statically linked" in err and "libusft.a" in err,
          "record of a static program: %d %r" % (rc, err))
    check(not os.path.exists(os.path.join(ARGS.work, "static.dat")),
          "a refused record left a trace file")
    rc, out, err = usft("list", "-f", static)
    check(rc == 0 and "outer" in out.split(), "list of a static program: %r" % err)
    # a libtool wrapper script in a build directory, the program in .libs/
    libs = os.path.join(ARGS.work, ".libs")
    os.makedirs(libs, exist_ok=True)
    shutil.copy(tracee("nest"), os.path.join(libs, "lt-wrapped"))
    wrapper = os.path.join(ARGS.work, "wrapped")
    with open(wrapper, "w") as f:
        f.write("#! /bin/sh\n# wrapped - temporary wrapper script for .libs/lt-wrapped\n"
                "# Generated by libtool (GNU libtool) 2.4.7\n"
                "exec \"$(dirname \"$0\")/.libs/lt-wrapped\" \"$@\"\n")
    os.chmod(wrapper, 0o755)
    rc, out, err = usft("list", "-f", wrapper)
    check(rc == 0 and "outer" in out.split() and "libtool wrapper" in err,
          "list of a libtool wrapper: %r %r" % (out, err))
    r = record([wrapper], tracer="function")
    check(r["events"] > 0, "record of a libtool wrapper: " + r["stderr"])
    # stripped: the runtime says how many sites lost their names
    stripped = os.path.join(ARGS.work, "nest-stripped-rt")
    shutil.copy(tracee("nest"), stripped)
    subprocess.run(["strip", stripped], check=True)
    rc, _, err = usft("record", "-o", "stripped.dat", stripped)
    check(re.search(r"usft: \S*nest-stripped-rt: (\d+) of \d+ sites have no function symbol "
                    r"and stay disabled \(a stripped file", err),
          "record of a stripped program: %r" % err)
    rc, _, err = usft("list", "-f")
    check(rc == 2 and "-f needs a program" in err, "list -f alone: %r" % err)
    # a bad option is named once, with the way to the help
    rc, _, err = usft("record", "--bogus", "true")
    check(rc == 2 and err.startswith("usft record: unknown option '--bogus'\nTry"),
          "record --bogus: %r" % err)
    rc, _, err = usft("report", "-i")
    check(rc == 2 and "option '-i' needs a value" in err, "report -i: %r" % err)
    rc, _, err = usft("report", "-i", os.path.join(ARGS.work, "nothing-here.dat"))
    check(rc == 1 and "unless -o FILE says where" in err, "report of a missing file: %r" % err)
    notelf = os.path.join(ARGS.work, "notes.txt")
    with open(notelf, "w") as f:
        f.write("not a program\n")
    rc, _, err = usft("list", "-f", notelf)
    check(rc == 1 and "is not an ELF program" in err, "list of a text file: %r" % err)
    rc, _, err = usft("report", "-i", notelf)
    check(rc == 1 and "not a usft trace file" in err and "usft record -o FILE PROG" in err,
          "report of a text file: %r" % err)
    # usft stat alone: a fresh runtime's zeros, and where a program's counters are
    rc, out, _ = usft("stat")
    check(rc == 0 and "fresh runtime" in out and "stat_at_exit=1" in out, "stat: %r" % out)
    rc, _, err = usft("record", "-q", "-O", "stat_at_exit=1", "-o", "stat.dat", tracee("nest"))
    check(rc == 0 and err.count("usft: stat_at_exit (pid") == 1 and
          re.search(r"^\s+nr_ops\s+1$", err, re.M),
          "-O stat_at_exit=1: the program's counters, once: %r" % err)


def case_stat():
    rc, out, _ = usft("stat")
    check(rc == 0 and "options:" in out and "counters:" in out, "stat:\n" + out)
    check(re.search(r"^\s+ops_trampolines\s+1\b", out, re.M), "ops_trampolines:\n" + out)
    rc, out, _ = usft("stat", env={"USFT_OPTIONS": "ops_trampolines=0"})
    check(re.search(r"^\s+ops_trampolines\s+0\b", out, re.M), "USFT_OPTIONS:\n" + out)


def case_preload_alone():
    """The shim without the CLI: LD_PRELOAD and USFT_* set by hand."""
    shim = os.path.join(os.path.dirname(ARGS.usft), "libusft-preload.so")
    libusft = ARGS.libusft
    env = {"LD_PRELOAD": shim + " " + libusft, "USFT_TRACER": "function_graph",
           "USFT_OUTPUT": "alone.dat"}
    rc0, out0, _ = run([tracee("signals")])
    rc, out, err = run([tracee("signals")], env=env)
    check(rc == rc0 and out == out0 and not err, "preload alone: %d %r %r" % (rc, out, err))
    golden("signals", canonical(report("text", "alone.dat")))
    # the shim alone: libusft loads after libc; it still works, and says so
    env["LD_PRELOAD"] = shim
    env["USFT_OUTPUT"] = "alone2.dat"
    rc, out, err = run([tracee("signals")], env=env)
    check(rc == rc0 and out == out0, "shim alone: %d %r %r" % (rc, out, err))
    check("put it in LD_PRELOAD" in err, "no warning for the shim alone: %r" % err)
    golden("signals", canonical(report("text", "alone2.dat")))
    # no tracer asked for: the shim only forwards, silently
    rc, out, err = run([tracee("signals")], env={"LD_PRELOAD": shim})
    check(rc == rc0 and out == out0 and not err, "idle shim: %d %r %r" % (rc, out, err))


# ---- against uftrace ----------------------------------------------------------

ULINE = re.compile(r"^.*?\[\s*(\d+)\] \| (.*)$")


def tree_lines(calls):
    """One thread's calls, normalised: a block that only had hidden library
    calls inside (uftrace prints `f() {` / `} /* f */`) becomes `f();`; a
    thread whose every line is indented (a forked child whose inherited
    frames never return in it: uftrace replay starts those at depth 0)
    starts at depth 0."""
    out = []
    lead = [len(c) - len(c.lstrip()) for c in calls if c.strip()]
    cut = min(lead) if lead else 0
    calls = [c[cut:] for c in calls]
    for c in calls:
        c = c.rstrip()
        m = re.match(r"^(\s*)\} /\* (\S+) \*/$", c)
        if m and out and out[-1] == m.group(1) + m.group(2) + "() {":
            out[-1] = m.group(1) + m.group(2) + "();"
            continue
        out.append(c)
    return "\n".join(out)


def uftrace_trees(prog_args, data):
    rc, _, err = run(["uftrace", "record", "-d", data, "-P", "."] + prog_args)
    check(rc == 0, "uftrace record failed (%d): %s" % (rc, err[-500:]))
    rc, out, err = run(["uftrace", "replay", "-d", data, "--no-libcall"])
    check(rc == 0, "uftrace replay failed (%d): %s" % (rc, err[-500:]))
    threads = {}
    for line in out.splitlines():
        m = ULINE.match(line)
        if not m or line.startswith("#") or m.group(2).strip().startswith("/* linux:"):
            continue        # header; the scheduler events uftrace adds
        threads.setdefault(m.group(1), []).append(m.group(2))
    return sorted(tree_lines(t) for t in threads.values())


def case_vs_uftrace():
    """The issue's yardstick: usft's function_graph call tree equals what
    `uftrace record -P .` records for the same binary (functions of the
    program, their order and depth; library calls left out), thread by
    thread.  Not compared: longjmp, C++ exceptions and dlopen, where the two
    differ by design, and the process events uftrace 0.13 gets wrong
    (coroutines, daemon(), exec from a thread, spawned children, reloaded
    libraries): docs/tracers.md, "Against uftrace"."""
    check(shutil.which("uftrace"), "uftrace is not installed (make deps installs it)")
    for prog in ("nest", "mathvar", "signals", "threads", "fork", "selfcalls"):
        record([tracee(prog)], "function_graph", out=prog + ".dat")
        threads, _ = graph_trees(report("text", inp=prog + ".dat"))
        ours = sorted(tree_lines(t) for t in threads.values())
        theirs = uftrace_trees([tracee(prog)], os.path.join(ARGS.work, prog + ".uftrace"))
        if ours != theirs:
            import difflib
            diff = "".join(difflib.unified_diff(
                "\n==\n".join(theirs).splitlines(True), "\n==\n".join(ours).splitlines(True),
                "uftrace", "usft"))
            raise Fail("%s: call trees differ from uftrace's:\n%s" % (prog, diff))


CASES = {k[5:]: v for k, v in globals().items() if k.startswith("case_")}


def golden_options(ap):
    ap.add_argument("--golden", required=True)
    ap.add_argument("--libusft", default="", help="libusft.so.0 of the build")
    ap.add_argument("--update", action="store_true", help="rewrite the golden files")


def main():
    # CASES is read when main() runs: reliability.py, views.py and crash.py set their own
    return harness.main(CASES, options=golden_options, fresh=True, ok="PASS")


if __name__ == "__main__":
    sys.exit(main())
