// SPDX-License-Identifier: MIT
/*
 * usft-bench-strcopy - what one `-A` string costs: strncpy_from_user_nofault()
 * in-process (the copy with a fault fixup) against its fallback, one
 * process_vm_readv() of the process (taken by a thread that blocks
 * SIGSEGV, as every copy was before), on a 13-byte string and on a bad
 * pointer.  The two alternate (A B A B); medians of the rounds, in ns per
 * copy.  A benchmark, never a timed test.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <usft/uaccess.h>
#include "cpu.h"

static notrace double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static notrace int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* ns per copy of @src, @n times, with SIGSEGV blocked (@fallback) or not */
static notrace double run(const char *src, long n, int fallback)
{
	sigset_t s;
	char dst[65];
	double t0, t1;
	long sum = 0;

	sigemptyset(&s);
	sigaddset(&s, SIGSEGV);
	pthread_sigmask(fallback ? SIG_BLOCK : SIG_UNBLOCK, &s, NULL);
	t0 = now_ns();
	for (long i = 0; i < n; i++)
		sum += strncpy_from_user_nofault(dst, src, sizeof(dst));
	t1 = now_ns();
	pthread_sigmask(SIG_UNBLOCK, &s, NULL);
	if (sum == 42)
		puts("");	/* keep the loop */
	return (t1 - t0) / n;
}

int main(int argc, char **argv)
{
	static const char *const names[2] = { "nofault", "process_vm_readv" };
	const char *srcs[2] = { "a good string", (const char *)16 };
	static const char *const what[2] = { "string13", "bad_pointer" };
	long n = argc > 1 ? atol(argv[1]) : 200000;
	int rounds = 5;
	double v[2][2][16];

	if (n <= 0) {
		fprintf(stderr, "usage: usft-bench-strcopy [COPIES]\n");
		return 2;
	}
	bench_print_cpu(stdout, "usft-bench-strcopy");
	printf("# usft-bench-strcopy: %d rounds of %ld copies, the two ways alternating\n", rounds, n);
	for (int r = 0; r < rounds; r++)
		for (int w = 0; w < 2; w++)
			for (int k = 0; k < 2; k++)
				v[w][k][r] = run(srcs[w], n, k);
	for (int w = 0; w < 2; w++)
		for (int k = 0; k < 2; k++) {
			qsort(v[w][k], rounds, sizeof(double), cmpd);
			printf("%s_%s ns_per_copy=%.1f ns_min=%.1f ns_max=%.1f\n", names[k], what[w],
			       v[w][k][rounds / 2], v[w][k][0], v[w][k][rounds - 1]);
		}
	return 0;
}
