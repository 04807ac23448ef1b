#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/attach_live.py - attaching to a running process with N patchable
functions (default 10,000), the function tracer on all of them, side by side
with the familiar yardsticks, in one run, rounds interleaved:

  attach_first_event_ms  `usft record -P PID -p function` started -> the first
                         traced call recorded (the trace's first event, on
                         CLOCK_MONOTONIC, against the time the command began)
  record_P_total_ms      that whole command with --duration D, minus D
                         (attach + detach + writing the file)
  attach_ms / detach_ms  `usft attach PID` (runtime loaded, nothing traced) and
                         `usft detach PID`
  record_start_first_event_ms  `usft record -p function PROG` started -> the
                         first traced call (the program started under usft)
  gdb_attach_ms          `gdb -p PID -batch` (attach, read symbols, detach)
  idle_call_ns_*         A/B/A: what one call of the target costs (the fastest
                         pass over all N, in ns per call, and the mean pass)
                         before the attach, attached with no tracer enabled
                         (`usft attach`), and after `usft detach`, measured by
                         the target itself over the same time each

  bench/attach_live.py [BUILD_DIR [N [ROUNDS]]]

The target is a generated program (f0..fN-1, -O0, the patch flags) that
calls every function in a loop; it is not linked with usft.  Prints the CPU
and load first, then one line per metric: the median and min..max over the
rounds.  Never part of make test (timings are never asserted)."""
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

BUILD = sys.argv[1] if len(sys.argv) > 1 else 'build'
N = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 5
DURATION = 0.3
USFT = os.path.abspath(os.path.join(BUILD, 'inject', 'usft'))


def cpu_line():
    model = '?'
    try:
        for line in open('/proc/cpuinfo'):
            if line.startswith('model name'):
                model = line.split(':', 1)[1].strip()
                break
    except OSError:
        pass
    return '# attach_live: cpu: %s, %d cpus online, load average %s' % (
        model, os.cpu_count(), ' '.join(open('/proc/loadavg').read().split()[:3]))


def build_target(d):
    pfe = '-fpatchable-function-entry=2' if os.uname().machine == 'aarch64' \
        else '-fpatchable-function-entry=5'
    src = os.path.join(d, 'funcs.c')
    with open(src, 'w') as f:
        for i in range(N):
            f.write('long f%d(long x) { return x + %d; }\n' % (i, i % 7 + 1))
        f.write('static long (*const tab[])(long) = {\n')
        f.write(''.join('\tf%d,\n' % i for i in range(N)))
        f.write('};\n')
    main = os.path.join(d, 'main.c')
    with open(main, 'w') as f:
        f.write('''#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <string.h>
#include <unistd.h>
extern long call_all(long x);
static volatile sig_atomic_t stop;
static void on_term(int s) { (void)s; stop = 1; }
/* --ab: call_all() in a loop, timed; a line on stdin gets the figures since the last one */
static int ab(void)
{
	unsigned long long n = 0, sum = 0, min = ~0ULL;
	struct pollfd p = { 0, POLLIN, 0 };
	long s = 0;

	printf("ready\\n");
	fflush(stdout);
	while (!stop) {
		struct timespec a, b;
		unsigned long long d;
		char line[64];

		clock_gettime(CLOCK_MONOTONIC, &a);
		s += call_all(s);
		clock_gettime(CLOCK_MONOTONIC, &b);
		d = (b.tv_sec - a.tv_sec) * 1000000000ULL + b.tv_nsec - a.tv_nsec;
		n++;
		sum += d;
		min = d < min ? d : min;
		if (poll(&p, 1, 0) > 0) {
			if (!fgets(line, sizeof(line), stdin))
				break;
			printf("%llu %llu %llu\\n", n, min, n ? sum / n : 0);
			fflush(stdout);
			n = sum = 0;
			min = ~0ULL;
		}
	}
	return s == 42;
}

int main(int argc, char **argv)
{
	long s = 0;
	int once = argc > 1 && !strcmp(argv[1], "--once");
	signal(SIGTERM, on_term);
	if (argc > 1 && !strcmp(argv[1], "--ab"))
		return ab();
	if (!once) { printf("ready\\n"); fflush(stdout); }
	do {
		s += call_all(s);
		if (!once)
			usleep(1000);
	} while (!once && !stop);
	return s == 42;
}
''')
    # the table and call_all() in the functions' file, built -O0 with the flags
    with open(src, 'a') as f:
        f.write('long call_all(long x)\n{\n\tlong s = 0;\n'
                '\tfor (unsigned long i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)\n'
                '\t\ts += tab[i](x);\n\treturn s;\n}\n')
    exe = os.path.join(d, 'target')
    subprocess.run(['cc', '-O0', pfe, '-c', src, '-o', os.path.join(d, 'funcs.o')], check=True)
    subprocess.run(['cc', '-O2', '-fpatchable-function-entry=0', main,
                    os.path.join(d, 'funcs.o'), '-o', exe], check=True)
    return exe


def first_event(trace):
    out = subprocess.run([USFT, 'info', '-i', trace], capture_output=True, text=True).stdout
    m = re.search(r'^# first event\s*:\s*([0-9.]+)', out, re.M)
    return float(m.group(1)) if m else None


def start_target(exe):
    p = subprocess.Popen([exe], stdout=subprocess.PIPE, text=True)
    if p.stdout.readline().strip() != 'ready':
        raise SystemExit('attach_live: the target did not start')
    return p


def stop_target(p):
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=30)


def idle_ab(exe, window, res):
    """the target's own per-call cost before, while attached with no
    tracer, and after the detach: the same window each, in one process"""
    p = subprocess.Popen([exe, '--ab'], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        if p.stdout.readline().strip() != 'ready':
            raise SystemExit('attach_live: the target did not start')

        def sample():
            p.stdin.write('\n')
            p.stdin.flush()
            n, mn, mean = (int(x) for x in p.stdout.readline().split())
            return mn / N, mean / N

        time.sleep(window / 4)
        sample()
        for phase, cmd in (('before', None), ('attached', 'attach'), ('after', 'detach')):
            if cmd:
                timed([USFT, cmd, str(p.pid)])
                sample()	# the window starts after the command
            time.sleep(window)
            mn, mean = sample()
            res['idle_call_ns_min_' + phase].append(mn)
            res['idle_call_ns_mean_' + phase].append(mean)
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=30)


def timed(cmd, **kw):
    t = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode:
        raise SystemExit('attach_live: %s failed (%d): %s' % (' '.join(cmd), r.returncode,
                                                              r.stderr.strip()))
    return t, time.monotonic() - t


def main():
    if not os.access(USFT, os.X_OK):
        raise SystemExit('attach_live: %s not built (make build)' % USFT)
    print(cpu_line())
    d = tempfile.mkdtemp(prefix='usft-attach-live-')
    res = {k: [] for k in ('attach_first_event_ms', 'record_P_total_ms', 'attach_ms',
                           'detach_ms', 'record_start_first_event_ms', 'gdb_attach_ms',
                           'idle_call_ns_min_before', 'idle_call_ns_min_attached',
                           'idle_call_ns_min_after', 'idle_call_ns_mean_before',
                           'idle_call_ns_mean_attached', 'idle_call_ns_mean_after')}
    try:
        exe = build_target(d)
        trace = os.path.join(d, 'trace.dat')
        gdb = shutil.which('gdb')
        for _ in range(ROUNDS):
            # 1. usft record -P on a running target
            p = start_target(exe)
            t0, dt = timed([USFT, 'record', '-P', str(p.pid), '-p', 'function',
                            '--duration', str(DURATION), '-o', trace])
            fe = first_event(trace)
            if fe is not None:
                res['attach_first_event_ms'].append((fe - t0) * 1e3)
            res['record_P_total_ms'].append((dt - DURATION) * 1e3)
            stop_target(p)
            # 2. usft attach / usft detach
            p = start_target(exe)
            _, dt = timed([USFT, 'attach', str(p.pid)])
            res['attach_ms'].append(dt * 1e3)
            _, dt = timed([USFT, 'detach', str(p.pid)])
            res['detach_ms'].append(dt * 1e3)
            # 3. gdb -p as the yardstick
            if gdb:
                _, dt = timed([gdb, '-p', str(p.pid), '-batch', '-nx'])
                res['gdb_attach_ms'].append(dt * 1e3)
            stop_target(p)
            # 4. the same program started under usft record
            t0, _ = timed([USFT, 'record', '-p', 'function', '-o', trace, exe, '--once'])
            fe = first_event(trace)
            if fe is not None:
                res['record_start_first_event_ms'].append((fe - t0) * 1e3)
            # 5. no tracer enabled: what the target's calls cost, A/B/A
            idle_ab(exe, 0.5, res)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    print('# %d functions, %d rounds, function tracer on all (median min..max); '
          'idle_call_ns_*: ns per call, no tracer' % (N, ROUNDS))
    for k, v in res.items():
        if v:
            print('%-30s %9.2f  %.2f..%.2f' % (k, statistics.median(v), min(v), max(v)))
        else:
            print('%-30s %9s' % (k, 'n/a'))


if __name__ == '__main__':
    main()
