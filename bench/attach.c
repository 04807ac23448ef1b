// SPDX-License-Identifier: MIT
/*
 * usft-bench-attach - seed 001 ("ftrace,bpf: Use single direct ops for bpf
 * trampolines") replayed: attach and detach a direct trampoline to N
 * functions (N = 1, 100, 10000)
 *   single_ops_N     one shared direct ops, one update_ftrace_direct_add()
 *                    and one update_ftrace_direct_del() per N functions
 *   per_tramp_ops_N  one ops per function: ftrace_set_filter_ip() +
 *                    register_ftrace_direct() each, then
 *                    unregister_ftrace_direct() each (a shutdown and a
 *                    grace-period wait per function)
 * Reports milliseconds for attach+detach and the synchronisation waits the
 * runtime counted.  Models alternate (A B A B), medians of the rounds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <usft/ftrace.h>
#include <usft/usft.h>
#include "cpu.h"

extern void *const bench_many[10000];
extern const char bench_empty_tramp[];

static unsigned long sites[10000];
static struct ftrace_ops single_ops;
static struct ftrace_ops *per_ops;

static notrace void die(const char *what, int err)
{
	fprintf(stderr, "usft-bench-attach: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

static notrace double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static notrace struct usft_stats stat(void)
{
	struct usft_stats st = { .sz = sizeof(st) };

	usft_stat(&st);
	return st;
}

static notrace double run_single(int n, unsigned long tramp, struct usft_stats *d)
{
	struct ftrace_hash *hash = alloc_ftrace_hash(12);
	struct usft_stats s0, s1;
	double t0, t1;
	int r;

	if (!hash)
		die("alloc_ftrace_hash", errno);
	for (int i = 0; i < n; i++)
		if (!add_ftrace_hash_entry_direct(hash, sites[i], tramp))
			die("add_ftrace_hash_entry_direct", errno);
	s0 = stat();
	t0 = now_ms();
	r = update_ftrace_direct_add(&single_ops, hash);
	if (r)
		die("update_ftrace_direct_add", r);
	r = update_ftrace_direct_del(&single_ops, hash);
	if (r)
		die("update_ftrace_direct_del", r);
	t1 = now_ms();
	s1 = stat();
	free_ftrace_hash(hash);
	d->nr_grace_periods = s1.nr_grace_periods - s0.nr_grace_periods;
	d->nr_syncs = s1.nr_syncs - s0.nr_syncs;
	d->nr_updates = s1.nr_updates - s0.nr_updates;
	return t1 - t0;
}

static notrace double run_per_ops(int n, unsigned long tramp, struct usft_stats *d)
{
	struct usft_stats s0, s1;
	double t0, t1;
	int r;

	memset(per_ops, 0, n * sizeof(*per_ops));
	s0 = stat();
	t0 = now_ms();
	for (int i = 0; i < n; i++) {
		r = ftrace_set_filter_ip(&per_ops[i], sites[i], 0, 1);
		if (!r)
			r = register_ftrace_direct(&per_ops[i], tramp);
		if (r)
			die("register_ftrace_direct", r);
	}
	for (int i = 0; i < n; i++) {
		r = unregister_ftrace_direct(&per_ops[i], tramp, true);
		if (r)
			die("unregister_ftrace_direct", r);
	}
	t1 = now_ms();
	s1 = stat();
	d->nr_grace_periods = s1.nr_grace_periods - s0.nr_grace_periods;
	d->nr_syncs = s1.nr_syncs - s0.nr_syncs;
	d->nr_updates = s1.nr_updates - s0.nr_updates;
	return t1 - t0;
}

static notrace int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int sizes[3] = { 1, 100, 10000 }, rounds = 0;
	double scale = 1.0;
	unsigned long tramp = (unsigned long)bench_empty_tramp;

	for (int i = 1; i < argc; i++) {
		char *end = NULL;

		if (!strcmp(argv[i], "--scale") && i + 1 < argc) {
			scale = strtod(argv[++i], &end);
			if (*end || !(scale > 0)) {
				fprintf(stderr, "usft-bench-attach: --scale '%s': give a number > 0 "
					"(0.01 gives N = 1, 10, 100)\n", argv[i]);
				return 2;
			}
		} else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
			long v = strtol(argv[++i], &end, 10);

			if (*end || v < 1 || v > 32) {
				fprintf(stderr, "usft-bench-attach: --rounds '%s': give 1 to 32\n",
					argv[i]);
				return 2;
			}
			rounds = (int)v;
		} else {
			fprintf(stderr, "usage: usft-bench-attach [--scale F] [--rounds N]\n"
				"  --scale F   F < 1: N = 1, 10 and 10000*F functions (default 1: 1, 100, 10000)\n"
				"  --rounds N  rounds per size, medians printed (1-32; default 5, 1 when F < 1)\n");
			return 2;
		}
	}
	if (scale < 1.0) {
		sizes[1] = 10;
		sizes[2] = (int)(10000 * scale) < 20 ? 20 : (int)(10000 * scale);
	}
	/* --rounds wins; without it a scaled-down run is a one-round look */
	if (!rounds)
		rounds = scale < 1.0 ? 1 : 5;
	if (usft_init())
		die("usft_init", errno);
	for (int i = 0; i < 10000; i++) {
		sites[i] = ftrace_location((unsigned long)bench_many[i]);
		if (!sites[i])
			die("a function without a site", EINVAL);
	}
	per_ops = calloc(10000, sizeof(*per_ops));
	if (!per_ops)
		die("calloc", ENOMEM);
	bench_print_cpu(stdout, "usft-bench-attach");
	printf("# usft-bench-attach: %d rounds, models alternating\n", rounds);
	for (int k = 0; k < 3; k++) {
		int n = sizes[k];
		double s[32], p[32];
		struct usft_stats ds = { 0 }, dp = { 0 };

		for (int r = 0; r < rounds; r++) {
			s[r] = run_single(n, tramp, &ds);
			p[r] = run_per_ops(n, tramp, &dp);
		}
		qsort(s, rounds, sizeof(double), cmpd);
		qsort(p, rounds, sizeof(double), cmpd);
		printf("section=attach case=single_ops_%d ms=%.3f grace_periods=%lu syncs=%lu updates=%lu "
		       "ms_min=%.3f ms_max=%.3f\n", n, s[rounds / 2], ds.nr_grace_periods, ds.nr_syncs,
		       ds.nr_updates, s[0], s[rounds - 1]);
		printf("section=attach case=per_tramp_ops_%d ms=%.3f grace_periods=%lu syncs=%lu updates=%lu "
		       "ms_min=%.3f ms_max=%.3f\n", n, p[rounds / 2], dp.nr_grace_periods, dp.nr_syncs,
		       dp.nr_updates, p[0], p[rounds - 1]);
		printf("ratio per_tramp_ops_%d/single_ops_%d=%.2f\n", n, n,
		       s[rounds / 2] > 0 ? p[rounds / 2] / s[rounds / 2] : 0.0);
	}
	return 0;
}
