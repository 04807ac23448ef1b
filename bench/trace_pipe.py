#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/trace_pipe.py - `cat trace_pipe` against `usft record`, side by side,
on the same running process in one run, rounds interleaved:

  pipe_lines_per_s     lines a reader of DIR/trace_pipe got per second, with
                       `echo work > set_ftrace_filter; echo function >
                       current_tracer` on a thread calling work() in a loop
  ring_written_per_s   events the trace array's ring took meanwhile (its
                       entries-written): what the pipe had to keep up with
  record_events_per_s  `usft record -P PID -p function -l work --duration D`
                       on the same process: events in the trace file per second
  pipe_lost            of the ring's events, the share the reader never got
                       (overwritten before it read them: 1 - lines / written)
  record_lost          of the record's events, the share it says it lost
  pipe_vs_record       pipe_lines_per_s / record_events_per_s

  bench/trace_pipe.py [BUILD_DIR [SECONDS [ROUNDS [BUFFER_KB]]]]

BUFFER_KB: the mount's buffer_size_kb for the pipe rounds (default: as
mounted, the kernel's 1408 a CPU).

The target is a generated program (one function called in a loop, built
with the patch flags, not linked with usft), attached with `usft attach
PID --mount DIR` each round: the record's detach unmounts it; root and
/dev/fuse needed).  Prints the CPU and load first,
then one line per metric: the median and min..max over the rounds.  Never
part of make test (timings are never asserted)."""
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

BUILD = sys.argv[1] if len(sys.argv) > 1 else 'build'
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 3
BUFFER_KB = int(sys.argv[4]) if len(sys.argv) > 4 else 0
USFT = os.path.abspath(os.path.join(BUILD, 'inject', 'usft'))
READER_EXE = None

TARGET = r'''#include <signal.h>
#include <stdio.h>
static volatile sig_atomic_t stop;
static void on_term(int s) { (void)s; stop = 1; }
__attribute__((noinline)) long work(long x) { __asm__ volatile("" ::: "memory"); return x + 1; }
int main(void)
{
	long s = 0;
	signal(SIGTERM, on_term);
	printf("ready\n");
	fflush(stdout);
	while (!stop)
		s = work(s);
	return s == 42;
}
'''


def cpu_line():
    model = '?'
    for line in open('/proc/cpuinfo'):
        if line.startswith('model name'):
            model = line.split(':', 1)[1].strip()
            break
    return '# trace_pipe: cpu: %s, %d cpus online, load average %s' % (
        model, os.cpu_count(), ' '.join(open('/proc/loadavg').read().split()[:3]))


def put(d, name, text):
    with open(os.path.join(d, name), 'w') as f:
        f.write(text + '\n')


def written(d):
    m = re.search(r'entries-written: \d+/(\d+)', open(os.path.join(d, 'trace')).read(4096))
    return int(m.group(1)) if m else 0


# The reader: `wc -l < trace_pipe` for a fixed time (read(2) of 1 MiB,
# memchr() for the newlines), in C so that the bench's own counting does not
# take the CPU the pipe needs (Python's bytes.count took a fifth of a CPU).
READER = r"""
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}
int main(int argc, char **argv)
{
	static char buf[1 << 20];
	int fd = argc == 3 ? open(argv[1], O_RDONLY) : -1;
	double t0, end;
	unsigned long long lines = 0;
	if (fd < 0)
		return 1;
	t0 = now();
	end = t0 + atof(argv[2]);
	while (now() < end) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			return 1;
		for (char *p = buf, *e = buf + n; (p = memchr(p, '\n', (size_t)(e - p))); p++)
			lines++;
	}
	printf("%llu %.6f\n", lines, now() - t0);
	return 0;
}
"""


def pipe_round(d):
    """Return: (lines/s through trace_pipe, events/s into the ring)"""
    put(d, 'set_ftrace_filter', 'work')
    if BUFFER_KB:
        put(d, 'buffer_size_kb', str(BUFFER_KB))
    put(d, 'current_tracer', 'function')
    w0 = written(d)
    r = subprocess.run([READER_EXE, os.path.join(d, 'trace_pipe'), str(SECONDS)],
                       capture_output=True, text=True)
    w1 = written(d)
    put(d, 'current_tracer', 'nop')
    if r.returncode:
        raise SystemExit('trace_pipe: reading trace_pipe failed')
    lines, dt = int(r.stdout.split()[0]), float(r.stdout.split()[1])
    return lines / dt, (w1 - w0) / dt


def record_round(pid, work):
    """Return: (events/s in the file, the share lost)"""
    out = os.path.join(work, 'r.dat')
    r = subprocess.run([USFT, 'record', '-P', str(pid), '-p', 'function', '-l', 'work',
                        '--duration', str(SECONDS), '-o', out], capture_output=True, text=True)
    m = re.search(r'usft: (\d+) events, (\d+) lost', r.stderr)
    if r.returncode or not m:
        raise SystemExit('trace_pipe: usft record -P failed (%d): %s' % (r.returncode, r.stderr))
    os.unlink(out)
    ev, lost = int(m.group(1)), int(m.group(2))
    return ev / SECONDS, lost / (ev + lost) if ev + lost else 0.0


def line(name, v, unit, fmt='%12.0f', rfmt='%.0f'):
    print(('%-20s ' + fmt + ' %s  (' + rfmt + '..' + rfmt + ', %d rounds)') %
          (name, statistics.median(v), unit, min(v), max(v), len(v)))


def main():
    if not os.access(USFT, os.X_OK):
        raise SystemExit('trace_pipe: %s not built (make build)' % USFT)
    if os.geteuid() or not os.path.exists('/dev/fuse'):
        raise SystemExit('trace_pipe: needs root and /dev/fuse (usft mount)')
    print(cpu_line())
    if BUFFER_KB:
        print('# trace_pipe: buffer_size_kb %d' % BUFFER_KB)
    work = tempfile.mkdtemp(prefix='usft-trace-pipe-')
    src, exe, d = (os.path.join(work, n) for n in ('loop.c', 'loop', 'm'))
    with open(src, 'w') as f:
        f.write(TARGET)
    pfe = '-fpatchable-function-entry=2' if os.uname().machine == 'aarch64' \
        else '-fpatchable-function-entry=5'
    subprocess.run(['cc', '-O2', pfe, src, '-o', exe], check=True)
    global READER_EXE
    READER_EXE = os.path.join(work, 'reader')
    with open(READER_EXE + '.c', 'w') as f:
        f.write(READER)
    subprocess.run(['cc', '-O2', READER_EXE + '.c', '-o', READER_EXE], check=True)
    os.mkdir(d)
    p = subprocess.Popen([exe], stdout=subprocess.PIPE, text=True)
    res = {'pipe': [], 'ring': [], 'record': [], 'plost': [], 'rlost': []}
    try:
        if p.stdout.readline().strip() != 'ready':
            raise SystemExit('trace_pipe: the target did not start')
        for _ in range(ROUNDS):
            # record -P detaches at its end, which unmounts: mount each round
            r = subprocess.run([USFT, 'attach', str(p.pid), '--mount', d], capture_output=True,
                               text=True)
            if r.returncode:
                raise SystemExit('trace_pipe: usft attach --mount failed: %s' % r.stderr)
            lps, wps = pipe_round(d)
            res['pipe'].append(lps)
            res['ring'].append(wps)
            res['plost'].append(max(0.0, 1 - lps / wps) if wps else 0.0)
            eps, lost = record_round(p.pid, work)
            res['record'].append(eps)
            res['rlost'].append(lost)
    finally:
        subprocess.run([USFT, 'detach', str(p.pid)], capture_output=True)
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=30)
    line('pipe_lines_per_s', res['pipe'], 'lines/s')
    line('ring_written_per_s', res['ring'], 'events/s')
    line('record_events_per_s', res['record'], 'events/s')
    line('pipe_lost', res['plost'], 'of the ring', '%12.3f', '%.3f')
    line('record_lost', res['rlost'], 'of the record', '%12.3f', '%.3f')
    print('%-20s %12.3f' % ('pipe_vs_record', statistics.median(res['pipe']) /
                            statistics.median(res['record'])))


if __name__ == '__main__':
    main()
