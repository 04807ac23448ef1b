// SPDX-License-Identifier: MIT
/*
 * usft-bench-direct-mt - a direct call hit by 1 and 2 threads at once,
 * with and without a third thread retargeting it all the time with
 * modify_ftrace_direct() between two empty trampolines:
 *
 *   plain_Nt      bench_plain(): a site no ops uses (the baseline)
 *   direct_Nt     bench_target() calling an empty direct trampoline
 *   modify_Nt     the same while the modifier thread runs
 *
 * Per-call cost of one caller thread (each timed on its own, the median of
 * its chunks: bench_time_calls()), and the modifier's milliseconds per
 * modify_ftrace_direct() with the callers running.  Cases interleaved
 * round after round, medians printed.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <usft/ftrace.h>
#include <usft/usft.h>
#include "cpu.h"
#include "ratio.h"

TRACEE long bench_target(long x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

TRACEE long bench_plain(long x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

extern const char bench_ret_tramp_start[], bench_ret_tramp_end[];

#define MAX_CALLERS 2
static struct ftrace_ops direct_ops;
static unsigned long tramp[2];
static volatile int cur_tramp;	/* index of the target now */
static long calls;
static pthread_barrier_t go, done;
static long (*volatile cur_fn)(long);
static int cur_callers;
static volatile int modifying, quit;
static double caller_ns[MAX_CALLERS];
static volatile long nr_modify;
static double modify_ms_sum;

static notrace void die(const char *what, int err)
{
	fprintf(stderr, "usft-bench-direct-mt: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

static notrace void *caller(void *arg)
{
	int id = (int)(long)arg;

	for (;;) {
		pthread_barrier_wait(&go);
		if (quit)
			return NULL;
		if (id < cur_callers) {
			bench_time_calls(cur_fn, calls / 20 + 1, NULL);	/* warm up */
			caller_ns[id] = bench_time_calls(cur_fn, calls, NULL);
		}
		pthread_barrier_wait(&done);
	}
}

/* retarget between the two trampolines while the callers run */
static notrace void *modifier(void *arg)
{
	int k = 0;

	while (!quit) {
		if (!modifying) {
			sched_yield();
			continue;
		}
		double t0 = bench_now_ns();
		int r = modify_ftrace_direct(&direct_ops, tramp[k ^ 1]);

		if (r)
			die("modify_ftrace_direct", r);
		k ^= 1;
		cur_tramp = k;
		modify_ms_sum += (bench_now_ns() - t0) / 1e6;
		nr_modify++;
	}
	return arg;
}

static notrace double sample(long (*fn)(long), int callers, bool modify)
{
	double sum = 0;

	cur_fn = fn;
	cur_callers = callers;
	modifying = modify;
	pthread_barrier_wait(&go);
	pthread_barrier_wait(&done);
	modifying = 0;
	for (int t = 0; t < callers; t++)
		sum += caller_ns[t];
	return sum / callers;
}

static notrace int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static notrace double median(const double *v, int n)
{
	double t[64];

	memcpy(t, v, n * sizeof(*t));
	qsort(t, n, sizeof(*t), cmpd);
	return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	double scale = 1.0, s[3][MAX_CALLERS][64];
	int rounds = 7, r, c, m, i;
	pthread_t th[MAX_CALLERS], mod;
	static const char *names[3] = { "plain", "direct", "modify" };
	unsigned long site;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--scale") && i + 1 < argc)
			scale = atof(argv[++i]);
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: usft-bench-direct-mt [--scale F] [--rounds N]\n");
			return 2;
		}
	}
	if (rounds < 1 || rounds > 64)
		rounds = 7;
	calls = (long)(1000000 * scale);
	if (calls < 1000)
		calls = 1000;
	if ((r = usft_init()))
		die("usft_init", r);
	site = ftrace_location((unsigned long)bench_target);
	if (!site)
		die("bench_target has no site", EINVAL);
	for (i = 0; i < 2; i++) {
		void *p = usft_alloc_trampoline(bench_ret_tramp_start,
						(size_t)(bench_ret_tramp_end - bench_ret_tramp_start), site);

		if (!p)
			die("usft_alloc_trampoline", errno);
		tramp[i] = (unsigned long)p;
	}
	if ((r = ftrace_set_filter_ip(&direct_ops, site, 0, 1)) ||
	    (r = register_ftrace_direct(&direct_ops, tramp[0])))
		die("register_ftrace_direct", r);

	pthread_barrier_init(&go, NULL, MAX_CALLERS + 1);
	pthread_barrier_init(&done, NULL, MAX_CALLERS + 1);
	for (i = 0; i < MAX_CALLERS; i++)
		if (pthread_create(&th[i], NULL, caller, (void *)(long)i))
			die("pthread_create", EAGAIN);
	if (pthread_create(&mod, NULL, modifier, NULL))
		die("pthread_create", EAGAIN);

	bench_print_cpu(stdout, "usft-bench-direct-mt");
	printf("# usft-bench-direct-mt: %ld calls per sample and thread, %d rounds, cases interleaved\n",
	       calls, rounds);
	for (r = 0; r < rounds; r++) {
		for (m = 0; m < 3; m++)
			for (c = 1; c <= MAX_CALLERS; c++)
				s[m][c - 1][r] = sample(m ? bench_target : bench_plain, c, m == 2);
		fprintf(stderr, "round %d/%d\n", r + 1, rounds);
	}
	quit = 1;
	pthread_barrier_wait(&go);
	for (i = 0; i < MAX_CALLERS; i++)
		pthread_join(th[i], NULL);
	pthread_join(mod, NULL);

	for (c = 1; c <= MAX_CALLERS; c++) {
		double base = median(s[0][c - 1], rounds);

		for (m = 0; m < 3; m++) {
			double v = median(s[m][c - 1], rounds);

			printf("section=direct_mt case=%s_%dt callers=%d ns_per_call=%.2f added_ns=%.2f "
			       "spread_ns=%.2f\n", names[m], c, c, v, v - base,
			       bench_spread(s[m][c - 1], rounds));
		}
	}
	{
		double d1 = median(s[1][0], rounds) - median(s[0][0], rounds);
		double d2 = median(s[1][1], rounds) - median(s[0][1], rounds);
		double e = bench_spread(s[1][0], rounds) + bench_spread(s[0][0], rounds);
		double e2 = bench_spread(s[1][1], rounds) + bench_spread(s[0][1], rounds);

		bench_print_ratio(stdout, "direct_added_2t_per_1t", "%.3f",
				  " (added ns per call of one thread, 2 callers / 1)",
				  d1 > e ? d2 / d1 : NAN, 0.0, 1e9, d1, e + e2);
	}
	printf("section=direct_mt case=modify modifies=%ld ms_per_modify=%.3f\n", nr_modify,
	       nr_modify ? modify_ms_sum / nr_modify : 0.0);
	if ((r = unregister_ftrace_direct(&direct_ops, tramp[cur_tramp], true)))
		die("unregister_ftrace_direct", r);
	return 0;
}
