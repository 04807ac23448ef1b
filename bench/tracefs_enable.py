#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/tracefs_enable.py - `echo function > current_tracer` against the
API, on 10,000 functions, in one process, rounds interleaved:

  api_enable_ms     register_ftrace_function() of an ops on every site,
                    timed inside the process (usft-bench-tracefs-enable)
  tracefs_enable_ms open + write("function") + close of DIR/current_tracer,
                    timed by this driver: FUSE, the control channel, the
                    trace array's set-up and the same registration
  api_disable_ms, tracefs_disable_ms   unregister_ftrace_function(), and
                    `echo nop > current_tracer`
  enable_ratio, disable_ratio          tracefs / API per round (target: at most 2)
  *_ratio_of_mins   the fastest tracefs round over the fastest API round

  bench/tracefs_enable.py [BUILD_DIR [ROUNDS]]

The process runs under `usft record -p nop --mount DIR` (needs root and
/dev/fuse).  Prints the CPU and load first, then one line per metric: the
median and min..max over the rounds.  Never part of make test (timings are
never asserted)."""
import os
import statistics
import subprocess
import sys
import tempfile
import time

BUILD = sys.argv[1] if len(sys.argv) > 1 else 'build'
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 7
USFT = os.path.abspath(os.path.join(BUILD, 'inject', 'usft'))
PROG = os.path.abspath(os.path.join(BUILD, 'bench', 'usft-bench-tracefs-enable'))


def mounted(d):
    with open('/proc/mounts') as f:
        return any(len(l.split()) > 1 and l.split()[1] == d for l in f)


def timed_write(path, text):
    t = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)
    return (time.perf_counter() - t) * 1e3


def line(name, v):
    print('%-20s %9.3f  (%.3f..%.3f, %d rounds)' % (name, statistics.median(v), min(v), max(v),
                                                     len(v)))


def main():
    if os.geteuid() != 0 or not os.path.exists('/dev/fuse'):
        sys.exit('bench/tracefs_enable.py: needs root and /dev/fuse')
    work = tempfile.mkdtemp(prefix='usft-bench-enable.')
    d = os.path.join(work, 'tracing')
    os.mkdir(d)
    env = {k: v for k, v in os.environ.items() if not k.startswith('USFT_') and k != 'LD_PRELOAD'}
    p = subprocess.Popen([USFT, 'record', '-q', '-p', 'nop', '-o', os.path.join(work, 'r.dat'),
                          '--mount', d, '--', PROG], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, env=env, cwd=work)

    def ask(cmd):
        p.stdin.write((cmd + '\n').encode())
        p.stdin.flush()
        return p.stdout.readline().decode().strip()

    try:
        print(p.stdout.readline().decode().strip())      # the CPU line
        if p.stdout.readline().decode().strip() != 'ready':
            sys.exit('bench/tracefs_enable.py: the program did not start')
        for _ in range(3000):
            if mounted(d):
                break
            time.sleep(0.01)
        ct = os.path.join(d, 'current_tracer')
        # once, untimed: both enable the same sites
        timed_write(ct, 'function\n')
        with open(os.path.join(d, 'enabled_functions')) as f:
            tracefs_sites = sum(1 for _ in f)
        timed_write(ct, 'nop\n')
        api_sites = int(ask('api').split('enabled=')[1])
        print('# sites enabled: tracefs %d, API %d' % (tracefs_sites, api_sites))
        res = {k: [] for k in ('api_enable_ms', 'tracefs_enable_ms', 'api_disable_ms',
                               'tracefs_disable_ms')}
        for r in range(ROUNDS):
            order = ('api', 'tracefs') if r % 2 == 0 else ('tracefs', 'api')
            for who in order:
                if who == 'api':
                    f = dict(kv.split('=') for kv in ask('api').split()[1:])
                    res['api_enable_ms'].append(int(f['reg_ns']) / 1e6)
                    res['api_disable_ms'].append(int(f['unreg_ns']) / 1e6)
                else:
                    res['tracefs_enable_ms'].append(timed_write(ct, 'function\n'))
                    res['tracefs_disable_ms'].append(timed_write(ct, 'nop\n'))
        for k, v in res.items():
            line(k, v)
        for what in ('enable', 'disable'):
            ratios = [t / a for t, a in zip(res['tracefs_%s_ms' % what], res['api_%s_ms' % what])]
            line('%s_ratio' % what, ratios)
            # the fastest of each: the cost without the waits for a CPU of a loaded machine
            print('%-20s %9.3f' % ('%s_ratio_of_mins' % what,
                                   min(res['tracefs_%s_ms' % what]) / min(res['api_%s_ms' % what])))
    finally:
        p.stdin.close()
        p.wait(timeout=60)
        if mounted(d):
            subprocess.run(['fusermount3', '-u', '-z', d])
    return 0


if __name__ == '__main__':
    sys.exit(main())
