// SPDX-License-Identifier: MIT
/*
 * usft-bench-textwrite - the two text write routes side by side: the
 * default mprotect(RWX) window and the W^X route through /proc/self/mem
 * (option text_write).  One ops is registered on N functions (N = 1 and
 * 10000) and unregistered again: each is one batch that writes N sites.
 *   <route>_N  ms_enable / ms_disable: the batch (register / unregister),
 *              including its syncs and the grace period of unregister
 *   <route>_site  us_per_site: (batch(10000) - batch(1)) / 9999, enable
 * Routes alternate (A B A B), medians of the rounds.  No policy is needed:
 * text_write=procmem takes the route a W^X policy makes usft take.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <usft/ftrace.h>
#include <usft/usft.h>
#include "cpu.h"

static const char *const routes[2] = { "mprotect", "procmem" };
static unsigned long hits;

static notrace void count_cb(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op,
			     struct ftrace_regs *fregs)
{
	__atomic_add_fetch(&hits, 1, __ATOMIC_RELAXED);
}

static notrace void die(const char *what, int err)
{
	fprintf(stderr, "usft-bench-textwrite: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

static notrace double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static notrace int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* one register + unregister of an ops on @glob: the two batch times in ms */
static notrace void run(const char *route, const char *glob, double *en, double *dis,
			unsigned long *procmem_writes)
{
	struct ftrace_ops ops = { .func = count_cb };
	struct usft_stats s0 = { .sz = sizeof(s0) }, s1 = { .sz = sizeof(s1) };
	double t0, t1, t2;
	int r;

	r = usft_set_option("text_write", route);
	if (r)
		die("usft_set_option(text_write)", r);
	r = ftrace_set_filter(&ops, (unsigned char *)glob, (int)strlen(glob), 1);
	if (r)
		die("ftrace_set_filter", r);
	usft_stat(&s0);
	t0 = now_ms();
	r = register_ftrace_function(&ops);
	if (r)
		die("register_ftrace_function", r);
	t1 = now_ms();
	r = unregister_ftrace_function(&ops);
	if (r)
		die("unregister_ftrace_function", r);
	t2 = now_ms();
	usft_stat(&s1);
	ftrace_free_filter(&ops);
	*en = t1 - t0;
	*dis = t2 - t1;
	*procmem_writes = s1.nr_procmem_writes - s0.nr_procmem_writes;
}

int main(int argc, char **argv)
{
	/* bench_many_1000 is one function; bench_many_* all 10000 (bench/many.c) */
	static const char *const globs[2] = { "bench_many_1000", "bench_many_*" };
	static const int sizes[2] = { 1, 10000 };
	double med_en[2][2], rounds_en[2][32], rounds_dis[2][32];
	int rounds = 5;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
			char *end;
			long v = strtol(argv[++i], &end, 10);

			if (*end || v < 1 || v > 32) {
				fprintf(stderr, "usft-bench-textwrite: --rounds '%s': give 1 to 32\n",
					argv[i]);
				return 2;
			}
			rounds = (int)v;
		} else {
			fprintf(stderr, "usage: usft-bench-textwrite [--rounds N]\n"
				"  --rounds N  rounds per size and route, medians printed (1-32; default 5)\n");
			return 2;
		}
	}
	if (usft_init())
		die("usft_init", EINVAL);
	bench_print_cpu(stdout, "usft-bench-textwrite");
	printf("# usft-bench-textwrite: %d rounds, routes alternating\n", rounds);
	for (int z = 0; z < 2; z++) {
		unsigned long writes[2] = { 0, 0 };

		for (int r = 0; r < rounds; r++)
			for (int k = 0; k < 2; k++) {
				double en, dis;

				run(routes[k], globs[z], &en, &dis, &writes[k]);
				rounds_en[k][r] = en;
				rounds_dis[k][r] = dis;
			}
		for (int k = 0; k < 2; k++) {
			double *e = rounds_en[k], *d = rounds_dis[k];

			qsort(e, rounds, sizeof(double), cmpd);
			qsort(d, rounds, sizeof(double), cmpd);
			med_en[k][z] = e[rounds / 2];
			printf("%s_%d ms_enable=%.3f ms_disable=%.3f ms_enable_min=%.3f "
			       "ms_enable_max=%.3f procmem_writes=%lu\n", routes[k], sizes[z],
			       e[rounds / 2], d[rounds / 2], e[0], e[rounds - 1], writes[k]);
		}
	}
	for (int k = 0; k < 2; k++)
		printf("%s_site us_per_site=%.3f\n", routes[k],
		       (med_en[k][1] - med_en[k][0]) * 1e3 / (sizes[1] - sizes[0]));
	printf("# calls counted while registered: %lu (none is expected)\n", hits);
	return 0;
}
