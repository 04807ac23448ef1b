// SPDX-License-Identifier: MIT
/*
 * usft-bench-callsite - issue "per-callsite ops": the cost of one traced
 * call while 0..64 unrelated ops are registered on another function, with
 * the kernel's list walk (per_callsite_ops=0) and with per-callsite ops
 * arrays (per_callsite_ops=1), interleaved; plus what the arrays cost:
 * memory (usft_stat) and the time to register the unrelated ops.
 * The relevant ops runs through the shared path in both modes
 * (ops_trampolines=0), so only the dispatch walk differs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <usft/ftrace.h>
#include <usft/usft.h>
#include "cpu.h"
#include "ratio.h"

TRACEE long cs_target(long x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

TRACEE long cs_other(long x)
{
	__asm__ volatile("" ::: "memory");
	return x + 2;
}

static struct ftrace_ops relevant, unrelated[64];
static unsigned long hits;

static notrace void count_cb(unsigned long ip, unsigned long pip, struct ftrace_ops *op,
			     struct ftrace_regs *fregs)
{
	hits++;
}

static notrace void die(const char *what, int err)
{
	fprintf(stderr, "usft-bench-callsite: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

/* ns per call of cs_target, the median of chunks (bench_time_calls()) */
static notrace double time_calls(long n)
{
	return bench_time_calls(cs_target, n, NULL);
}

static notrace int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* one sample: set the mode, register, time, unregister */
static notrace double sample(int mode, int n_unrel, long calls, double *reg_ms,
			     unsigned long *bytes)
{
	struct usft_stats st = { .sz = sizeof(st) };
	double t0, ns;
	int r;

	if ((r = usft_set_option("per_callsite_ops", mode ? "1" : "0")))
		die("per_callsite_ops", r);
	memset(&relevant, 0, sizeof(relevant));
	relevant.func = count_cb;
	if (ftrace_set_filter_ip(&relevant, (unsigned long)cs_target, 0, 1) ||
	    register_ftrace_function(&relevant))
		die("register relevant", errno);
	t0 = bench_now_ns();
	for (int i = 0; i < n_unrel; i++) {
		memset(&unrelated[i], 0, sizeof(unrelated[i]));
		unrelated[i].func = count_cb;
		if (ftrace_set_filter_ip(&unrelated[i], (unsigned long)cs_other, 0, 1) ||
		    register_ftrace_function(&unrelated[i]))
			die("register unrelated", errno);
	}
	*reg_ms = (bench_now_ns() - t0) / 1e6;
	usft_stat(&st);
	*bytes = st.callsite_bytes;
	time_calls(calls / 20 + 1);
	ns = time_calls(calls);
	for (int i = 0; i < n_unrel; i++) {
		unregister_ftrace_function(&unrelated[i]);
		ftrace_free_filter(&unrelated[i]);
	}
	unregister_ftrace_function(&relevant);
	ftrace_free_filter(&relevant);
	return ns;
}

int main(int argc, char **argv)
{
	static const int counts[] = { 0, 1, 2, 4, 8, 16, 32, 64 };
	int nn = (int)(sizeof(counts) / sizeof(counts[0])), rounds = 5;
	double scale = 1.0;
	long calls;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--scale") && i + 1 < argc)
			scale = atof(argv[++i]);
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: usft-bench-callsite [--scale F] [--rounds N]\n");
			return 2;
		}
	}
	if (rounds < 1 || rounds > 32)
		rounds = 5;
	calls = (long)(1000000 * scale);
	if (calls < 1000)
		calls = 1000;
	if (usft_init())
		die("usft_init", errno);
	if (usft_set_option("ops_trampolines", "0"))
		die("ops_trampolines", errno);
	bench_print_cpu(stdout, "usft-bench-callsite");
	printf("# usft-bench-callsite: %ld calls per sample, %d rounds, modes interleaved\n",
	       calls, rounds);
	double l0 = 0, c0 = 0, l16 = 0, c16 = 0;

	for (int k = 0; k < nn; k++) {
		double ls[32], cs[32], lreg = 0, creg = 0;
		unsigned long bytes = 0, b;

		for (int r = 0; r < rounds; r++) {
			ls[r] = sample(0, counts[k], calls, &lreg, &b);
			cs[r] = sample(1, counts[k], calls, &creg, &bytes);
		}
		qsort(ls, rounds, sizeof(double), cmpd);
		qsort(cs, rounds, sizeof(double), cmpd);
		printf("section=callsite case=list_unrelated_%d ns_per_call=%.2f register_ms=%.3f "
		       "ns_per_call_min=%.2f ns_per_call_max=%.2f\n", counts[k], ls[rounds / 2], lreg,
		       ls[0], ls[rounds - 1]);
		printf("section=callsite case=callsite_unrelated_%d ns_per_call=%.2f register_ms=%.3f "
		       "array_bytes=%lu ns_per_call_min=%.2f ns_per_call_max=%.2f\n", counts[k],
		       cs[rounds / 2], creg, bytes, cs[0], cs[rounds - 1]);
		if (counts[k] == 0) {
			l0 = ls[rounds / 2];
			c0 = cs[rounds / 2];
		}
		if (counts[k] == 16) {
			l16 = ls[rounds / 2];
			c16 = cs[rounds / 2];
		}
	}
	printf("ratio list_ns_per_unrelated_ops=%.3f callsite_ns_per_unrelated_ops=%.3f (0 -> 16)\n",
	       (l16 - l0) / 16, (c16 - c0) / 16);
	return hits ? 0 : 1;
}
