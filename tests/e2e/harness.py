# SPDX-License-Identifier: MIT
"""What every tests/e2e driver (e2e.py, attach.py, tracefs.py and the ones
that import them) shares: the parsed command line, the `usft()` runner, the
tracee-server in the background, waits, and the per-case main().

    import harness
    from harness import ARGS, Fail, check, usft, tracee, Server, wait_for

    def case_x(): ...
    CASES = {k[5:]: v for k, v in globals().items() if k.startswith("case_")}
    sys.exit(harness.main(CASES, "x_"))

ARGS is one object, filled in place by main(): `from harness import ARGS`
before main() runs sees the parsed options.  Never asserts a time: waits have
generous limits and only fail when a thing never happens.
"""
import argparse
import os
import shutil
import signal
import subprocess
import time

# the command line of the case being run (main() fills it)
ARGS = argparse.Namespace()
# default timeout (s) of run() / usft(): one hung command fails the case
TIMEOUT = 300


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def env(extra=None):
    """os.environ without the USFT_* variables and LD_PRELOAD (the tests own
    them), then @extra on top"""
    e = {k: v for k, v in os.environ.items() if not k.startswith("USFT_") and k != "LD_PRELOAD"}
    if extra:
        e.update(extra)
    return e


_env = env


def run(cmd, env=None, cwd=None, timeout=None, user=None):
    """@cmd in ARGS.work (or @cwd) with env(@env), as uid/gid @user if given;
    Return: (exit status, stdout, stderr) as text"""
    cmd = [str(a) for a in cmd]
    if user:
        cmd = ["setpriv", "--reuid=%d" % user, "--regid=%d" % user, "--clear-groups"] + cmd
    p = subprocess.run(cmd, env=_env(env), cwd=cwd or ARGS.work, capture_output=True,
                       timeout=timeout or TIMEOUT)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def usft(*args, env=None, timeout=None, user=None):
    """the usft command of the build: Return: (exit status, stdout, stderr)"""
    return run([ARGS.usft] + list(args), env=env, timeout=timeout, user=user)


def tracee(name):
    return os.path.join(ARGS.tracees, "tracee-" + name)


class Server:
    """samples/tracee/server.c (or another tracee @prog) in the background;
    started once it printed "ready"; finish() or stop() checks its results."""

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

    def stop(self, timeout=30):
        """SIGTERM; Return: (exit status, stdout, stderr)"""
        if self.alive():
            self.p.send_signal(signal.SIGTERM)
        out, err = self.p.communicate(timeout=timeout)
        return self.p.returncode, out.decode(), err.decode()

    def finish(self):
        """stop(), and its own check of every result it computed passed"""
        rc, out, err = self.stop(60)
        check(rc == 0, "tracee-server failed (%s): %s %s" % (rc, out[-300:], err[-300:]))

    def kill(self):
        if self.alive():
            self.p.kill()
            self.p.communicate(timeout=30)


def wait_for(cond, what, limit=30.0):
    """poll @cond until true; fail only if it never is within @limit seconds"""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.02)
    raise Fail("never happened: " + what)


def mounted(d):
    """@d is a mount point in /proc/mounts"""
    with open("/proc/mounts") as f:
        return any(line.split()[1] == d for line in f if len(line.split()) > 1)


def main(cases, prefix="", options=None, fresh=False, skip=None, ok="ok", timeout=None):
    """Parse CASE --usft --tracees --work (and what @options(parser) adds:
    path options are made absolute), make the work directory (emptied first
    if @fresh), run the case.  @skip(): a reason to skip (exit 77) or None.
    Prints "FAIL <prefix>CASE: why" (the ctest FAIL_REGULAR_EXPRESSION) or
    "<ok> <prefix>CASE".  Return: the exit status."""
    global TIMEOUT
    if timeout:
        TIMEOUT = timeout
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=sorted(cases))
    ap.add_argument("--usft", required=True)
    ap.add_argument("--tracees", required=True)
    ap.add_argument("--work", required=True)
    if options:
        options(ap)
    ap.parse_args(namespace=ARGS)
    for a in ("usft", "tracees", "work", "golden", "libusft"):
        if getattr(ARGS, a, None):
            setattr(ARGS, a, os.path.abspath(getattr(ARGS, a)))
    name = prefix + ARGS.case
    why = skip() if skip else None
    if why:
        print("SKIP %s: %s" % (name, why))
        return 77
    if fresh:
        shutil.rmtree(ARGS.work, ignore_errors=True)
    os.makedirs(ARGS.work, exist_ok=True)
    try:
        cases[ARGS.case]()
    except Fail as e:
        print("FAIL %s: %s" % (name, e))
        return 1
    except subprocess.TimeoutExpired as e:
        print("FAIL %s: timeout: %s" % (name, e))
        return 1
    print("%s %s" % (ok, name))
    return 0
