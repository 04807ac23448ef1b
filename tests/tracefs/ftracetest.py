#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The kernel's own ftracetest, run unchanged on usft's tracefs.

ftracetest.py --usft PATH --toykernel PATH --work DIR --expected FILE
              [--tarball PATH] [--cases DIR ...] [--keep]

1. Extracts tools/testing/selftests/ftrace from Debian's linux-source-6.1
   tarball into WORK (once; never into the source tree: the scripts are GPL).
2. In a private mount and pid namespace (unshare): starts samples/toykernel
   under `usft record -p nop`, mounts its tracefs (`usft mount PID DIR`,
   fsname tracefs, so ftracetest finds it as the first tracefs line of
   /proc/mounts), and runs ftracetest on test.d/00basic and test.d/ftrace.
   Inside that namespace /proc/sys/kernel/sched_rt_runtime_us (which
   ftracetest sets to -1) is a scratch file, stack_tracer_enabled is the
   tracefs's stack tracer switch, and modprobe/rmmod refuse: nothing the
   run does reaches the host's kernel.
3. Parses the per-case results into a table (WORK/results.txt) and compares
   it with the expected table: a case expected PASS that does not pass fails
   the test, as does a case missing from either side.  Cases expected to
   fail give their reason in the table (the kernel itself, or trace events).

Exit status: 0 as expected, 1 a regression, 77 skipped (the reason is
printed: no tarball, not root, no /dev/fuse, no `usft mount` yet).
"""
import argparse
import ctypes
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77
TARBALL = "/usr/src/linux-source-6.1.tar.xz"
SELFTESTS = "tools/testing/selftests/ftrace"
CASE_DIRS = ["test.d/00basic", "test.d/ftrace"]
RESULTS = ("PASS", "FAIL", "UNRESOLVED", "UNTESTED", "UNSUPPORTED", "XFAIL", "UNDEFINED")


def skip(msg):
    print("ftracetest: SKIPPED: " + msg)
    sys.exit(SKIP)


def extract(tarball, work):
    """The selftests directory, extracted once per tarball (size+mtime stamp)."""
    dest = os.path.join(work, "selftests-ftrace")
    st = os.stat(tarball)
    stamp_text = "%s %d %d\n" % (tarball, st.st_size, int(st.st_mtime))
    stamp = os.path.join(dest, ".usft-stamp")
    try:
        with open(stamp) as f:
            if f.read() == stamp_text:
                return dest
    except OSError:
        pass
    shutil.rmtree(dest, ignore_errors=True)
    tmp = tempfile.mkdtemp(prefix="extract.", dir=work)
    t0 = time.monotonic()
    subprocess.run(["tar", "-xJf", tarball, "-C", tmp, "--wildcards", "*/" + SELFTESTS + "/*"],
                   check=True)
    tops = os.listdir(tmp)
    if len(tops) != 1 or not os.path.isfile(os.path.join(tmp, tops[0], SELFTESTS, "ftracetest")):
        sys.exit("ftracetest: %s has no %s/ftracetest" % (tarball, SELFTESTS))
    os.rename(os.path.join(tmp, tops[0], SELFTESTS), dest)
    shutil.rmtree(tmp)
    with open(stamp, "w") as f:
        f.write(stamp_text)
    print("ftracetest: extracted %s from %s in %.1f s" % (SELFTESTS, tarball, time.monotonic() - t0))
    return dest


def die_with_parent():
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def has_mount_command(usft):
    p = subprocess.run([usft, "help", "mount"], capture_output=True, text=True)
    return p.returncode == 0 and p.stdout.startswith("usage: usft mount")


# ---- inside the namespace -------------------------------------------------

def wait_for(cond, seconds, what):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.05)
    raise RuntimeError("timed out waiting for " + what)


def mounted(path):
    with open("/proc/self/mounts") as f:
        return any(line.split()[1] == path for line in f)


def hide_other_tracefs():
    """ftracetest takes the FIRST /proc/mounts line containing "tracefs": the
    kernel's own tracefs (/sys/kernel/tracing on most hosts) or another usft
    mount must not be it.  Detached in this namespace only (private)."""
    with open("/proc/self/mounts") as f:
        others = [line.split()[1] for line in f if "tracefs" in line]
    for path in reversed(others):
        subprocess.run(["umount", "-l", path.replace("\\040", " ")], check=True)


def guard_kernel_tracefs(tracing):
    """The kernel's tracefs is global (not per namespace): ftracetest must never
    reach it.  It mounts /sys/kernel/tracing (or debugfs) itself when it finds
    no tracefs line, so in this namespace /sys/kernel becomes an empty
    read-only tmpfs, and the first tracefs line must be ours."""
    if os.path.isdir("/sys/kernel"):
        subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=4k", "usft-none", "/sys/kernel"],
                       check=True)
    with open("/proc/self/mounts") as f:
        first = next((line.split()[1] for line in f if "tracefs" in line), None)
    if first != tracing:
        raise RuntimeError("the first tracefs line of /proc/mounts is %r, not %r: not running "
                           "ftracetest" % (first, tracing))


def shield_host(work, tracing):
    """What ftracetest writes to the host kernel goes to scratch files.

    /proc/sys/kernel is replaced, in this namespace only, by a directory of
    links to the real entries, except sched_rt_runtime_us (a scratch copy:
    ftracetest sets it to -1) and stack_tracer_enabled (a link to the
    tracefs's own stack tracer switch when it has one: the kernel's is this
    sysctl, which a FUSE mount cannot add).  modprobe/rmmod/insmod refuse.
    """
    kdir = "/proc/sys/kernel"
    orig = os.path.join(work, "proc-sys-kernel")
    over = os.path.join(work, "sys-kernel")
    os.makedirs(orig, exist_ok=True)
    shutil.rmtree(over, ignore_errors=True)
    os.makedirs(over)
    subprocess.run(["mount", "--bind", kdir, orig], check=True)
    for e in os.listdir(orig):
        if e == "sched_rt_runtime_us":
            with open(os.path.join(orig, e)) as f, open(os.path.join(over, e), "w") as g:
                g.write(f.read())
        elif e != "stack_tracer_enabled":
            os.symlink(os.path.join(orig, e), os.path.join(over, e))
    knob = os.path.join(tracing, "stack_tracer_enabled")
    if os.path.isfile(knob):
        os.symlink(knob, os.path.join(over, "stack_tracer_enabled"))
    subprocess.run(["mount", "--bind", over, kdir], check=True)
    shims = os.path.join(work, "bin")
    os.makedirs(shims, exist_ok=True)
    for tool in ("modprobe", "rmmod", "insmod"):
        path = os.path.join(shims, tool)
        with open(path, "w") as f:
            f.write("#!/bin/sh\necho \"%s: refused: the ftracetest run of usft loads no kernel "
                    "module\" >&2\nexit 1\n" % tool)
        os.chmod(path, 0o755)
    return shims


def run_inner(a):
    work = a.work
    tracing = os.path.join(work, "tracing")
    os.makedirs(tracing, exist_ok=True)
    hide_other_tracefs()
    env = {k: v for k, v in os.environ.items() if not k.startswith("USFT_") and k != "LD_PRELOAD"}
    rec = subprocess.Popen([a.usft, "record", "-q", "-p", "nop", "-b", "1024",
                            "-o", os.path.join(work, "toykernel.dat"), "--", a.toykernel],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    procs = [rec]
    try:
        line = rec.stdout.readline()
        m = re.match(r"toykernel: pid (\d+)", line)
        if not m:
            raise RuntimeError("toykernel did not start: %r %s" % (line, rec.stderr.read()))
        pid = m.group(1)
        mnt = subprocess.Popen([a.usft, "mount", pid, tracing], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        procs.append(mnt)
        wait_for(lambda: mounted(tracing) or mnt.poll() not in (None, 0), 20, "the mount")
        if not mounted(tracing):
            raise RuntimeError("usft mount %s %s failed: %s" % (pid, tracing, mnt.stdout.read()))
        shims = shield_host(work, tracing)
        guard_kernel_tracefs(tracing)
        logdir = os.path.join(work, "logs")
        shutil.rmtree(logdir, ignore_errors=True)
        cmd = ["sh", os.path.join(a.selftests, "ftracetest"), "-k", "-l", logdir]
        cmd += [os.path.join(a.selftests, d) for d in a.cases]
        env2 = dict(env, PATH=shims + ":" + env.get("PATH", "/usr/bin:/bin"))
        t0 = time.monotonic()
        p = subprocess.run(cmd, env=env2, cwd=work, capture_output=True, text=True,
                           timeout=a.timeout)
        with open(os.path.join(work, "ftracetest.out"), "w") as f:
            f.write(p.stdout + p.stderr)
        print("ftracetest: ran in %.1f s (exit %d)" % (time.monotonic() - t0, p.returncode))
    finally:
        if mounted(tracing):
            subprocess.run(["fusermount3", "-u", tracing])
        for pr in reversed(procs):
            if pr.poll() is None:
                pr.send_signal(signal.SIGINT if pr is rec else signal.SIGTERM)
                try:
                    pr.wait(10)
                except subprocess.TimeoutExpired:
                    pr.kill()
                    pr.wait()
    return 0


# ---- results ---------------------------------------------------------------

def parse(work, selftests, cases):
    """{"00basic/basic2.tc (instance)": "PASS", ...} from the output and the logs."""
    names = {}
    for d in cases:
        for f in os.listdir(os.path.join(selftests, d)):
            if f.endswith(".tc"):
                names[f] = os.path.basename(d) + "/" + f
    caseno = {}
    for f in os.listdir(os.path.join(work, "logs")):
        m = re.match(r"(\d+)-(.+\.tc)-log\.", f)
        if m:
            caseno[int(m.group(1))] = names.get(m.group(2), m.group(2))
    results = {}
    with open(os.path.join(work, "ftracetest.out")) as f:
        for line in f:
            m = re.match(r"\[(\d+)\]( \(instance\) )?.*\t\[(\w+)\]\s*$", line)
            if m and m.group(3) in RESULTS and int(m.group(1)) in caseno:
                key = caseno[int(m.group(1))] + (" (instance)" if m.group(2) else "")
                results[key] = m.group(3)
    return results, caseno


def read_expected(path):
    """Lines `CASE[ (instance)]  RESULT  [reason]`; # starts a comment line."""
    exp = {}
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            m = re.match(r"(\S+(?: \(instance\))?)\s+(\w+)\s*(.*)$", line)
            if not m or m.group(2) not in RESULTS:
                sys.exit("ftracetest: %s: bad line %r" % (path, line))
            exp[m.group(1)] = (m.group(2), m.group(3))
    return exp


def compare(results, expected, work, caseno):
    bad = []
    for case, (want, reason) in sorted(expected.items()):
        got = results.get(case, "MISSING")
        if want == "PASS" and got != "PASS":
            bad.append("%s: expected PASS, got %s" % (case, got))
        elif got == "MISSING":
            bad.append("%s: not run (expected %s)" % (case, want))
        elif want != "PASS" and got == "PASS":
            print("ftracetest: note: %s now passes (expected %s: %s): update %s"
                  % (case, want, reason, "tests/tracefs/ftracetest-expected.txt"))
    for case in sorted(set(results) - set(expected)):
        bad.append("%s: %s, and not in the expected table" % (case, results[case]))
    with open(os.path.join(work, "results.txt"), "w") as f:
        for case in sorted(set(results) | set(expected)):
            want, reason = expected.get(case, ("-", ""))
            f.write("%-46s %-12s %-12s %s\n" % (case, results.get(case, "MISSING"), want,
                                                 reason))
    with open(os.path.join(work, "results.txt")) as f:
        print("ftracetest: case / result / expected / reason\n" + f.read(), end="")
    for b in bad:
        case = b.split(":")[0].replace(" (instance)", "")
        print("FAIL " + b)
        for n, c in caseno.items():
            if c == case:
                for log in os.listdir(os.path.join(work, "logs")):
                    if log.startswith("%d-" % n):
                        with open(os.path.join(work, "logs", log), errors="replace") as f:
                            print("---- %s (last 30 lines)\n%s" % (log, "".join(f.readlines()[-30:])))
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--usft", required=True)
    ap.add_argument("--toykernel", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--expected", required=True)
    ap.add_argument("--tarball", default=os.environ.get("USFT_LINUX_SOURCE", TARBALL))
    ap.add_argument("--cases", nargs="+", default=CASE_DIRS)
    ap.add_argument("--timeout", type=float, default=240)
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--selftests", help=argparse.SUPPRESS)
    a = ap.parse_args()
    a.work = os.path.abspath(a.work)
    if a.inner:
        return run_inner(a)

    if not os.path.isfile(a.tarball):
        skip("%s is missing: apt-get install -y linux-source-6.1 (make deps installs it)"
             % a.tarball)
    if os.geteuid() != 0:
        skip("ftracetest runs as root only (it checks id -u), and FUSE in a private "
             "mount namespace needs CAP_SYS_ADMIN")
    if not os.path.exists("/dev/fuse") or not shutil.which("fusermount3"):
        skip("no /dev/fuse or fusermount3: apt-get install -y fuse3")
    if not shutil.which("unshare"):
        skip("no unshare(1): apt-get install -y util-linux")
    if not has_mount_command(a.usft):
        skip("%s has no `mount` command yet (the FUSE tracefs)" % a.usft)
    os.makedirs(a.work, exist_ok=True)
    a.selftests = extract(a.tarball, a.work)

    inner = [sys.executable, os.path.abspath(__file__), "--inner", "--usft", a.usft,
             "--toykernel", a.toykernel, "--work", a.work, "--expected", a.expected,
             "--selftests", a.selftests, "--timeout", str(a.timeout), "--cases"] + a.cases
    # if this test is killed, unshare gets SIGKILL (parent-death signal), and
    # with --kill-child the namespace's first process, and so all of it, too
    p = subprocess.run(["unshare", "--mount", "--propagation", "private", "--pid", "--fork",
                        "--mount-proc", "--kill-child"] + inner, timeout=a.timeout + 60,
                       preexec_fn=die_with_parent)
    if p.returncode != 0:
        print("FAIL the run inside the namespace exited %d" % p.returncode)
        return 1
    results, caseno = parse(a.work, a.selftests, a.cases)
    return compare(results, read_expected(a.expected), a.work, caseno)


if __name__ == "__main__":
    sys.exit(main())
