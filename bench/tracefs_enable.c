// SPDX-License-Identifier: MIT
/*
 * usft-bench-tracefs-enable - the process side of bench/tracefs_enable.py:
 * 10,000 traced functions (many.c) and the API's cost of enabling a
 * callback on every site, for the driver to set beside `echo function >
 * current_tracer` in this same process's tracefs.  Runs under `usft record
 * -p nop --mount DIR` (it links libusft, which the shim shares).  Prints
 * "ready", then answers each line of stdin:
 *   api    register_ftrace_function() of an ops without a filter (every
 *          site, as current_tracer's function tracer), then its
 *          unregister_ftrace_function(), each timed here:
 *          "api reg_ns=N unreg_ns=M enabled=E" (E: sites enabled meanwhile)
 *   call   calls the 10,000 functions once: "call"
 * and exits 0 at end of input.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <usft/ftrace.h>
#include <usft/usft.h>
#include "cpu.h"

extern void *const bench_many[10000];

static unsigned long hits;

static notrace void count_call(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op,
			       struct ftrace_regs *fregs)
{
	(void)ip, (void)parent_ip, (void)op, (void)fregs;
	__atomic_add_fetch(&hits, 1, __ATOMIC_RELAXED);
}

static struct ftrace_ops ops = { .func = count_call };

static notrace long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static notrace unsigned long nr_enabled(void)
{
	struct usft_stats st = { .sz = sizeof(st) };

	usft_stat(&st);
	return st.nr_enabled;
}

int main(void)
{
	char line[64];

	setvbuf(stdout, NULL, _IOLBF, 0);
	bench_print_cpu(stdout, "usft-bench-tracefs-enable");
	printf("ready\n");
	while (fgets(line, sizeof(line), stdin)) {
		if (!strcmp(line, "api\n")) {
			long long t0 = now_ns(), t1, t2;
			int r = register_ftrace_function(&ops);
			unsigned long en;

			t1 = now_ns();
			en = nr_enabled();
			t2 = now_ns();
			if (r || unregister_ftrace_function(&ops)) {
				printf("api failed: %d\n", r);
				return 1;
			}
			printf("api reg_ns=%lld unreg_ns=%lld enabled=%lu\n", t1 - t0, now_ns() - t2,
			       en);
		} else if (!strcmp(line, "call\n")) {
			for (int i = 0; i < 10000; i++)
				((long (*)(long))bench_many[i])(i);
			printf("call\n");
		} else {
			printf("bad command: %s", line);
		}
	}
	return 0;
}
