// SPDX-License-Identifier: MIT
/*
 * bench/ratio.c - how the benchmarks print a ratio of medians honestly:
 * with the noise of the rounds, and never a value the quantity cannot take.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <usft/ftrace.h>
#include "ratio.h"

static notrace int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * How far a median of the rounds can be off: half the spread of the
 * samples once the lowest and highest quarter are left out (all of them
 * below four rounds), so that one disturbed round does not count.
 */
notrace double bench_spread(const double *v, int n)
{
	double t[64];
	int k = n / 4;

	memcpy(t, v, n * sizeof(*t));
	qsort(t, n, sizeof(*t), cmp_double);
	return (t[n - 1 - k] - t[k]) / 2;
}

/*
 * One "ratio NAME=VALUE (HOW)" line.  A value outside [@lo, @hi] (a
 * negative cost, a gap closed by more than 100%) is impossible: when it is
 * outside by no more than the rounds' spread @noise_ns (@ns_per_unit
 * converts the ratio's units to ns per call) the line gives the bound and
 * what was measured; further out, or NAN (a denominator lost in the
 * noise), it says "noisy" instead of a number.
 * Return: 1 when the line says noisy.
 */
notrace int bench_print_ratio(FILE *out, const char *name, const char *fmt, const char *how,
			      double v, double lo, double hi, double ns_per_unit, double noise_ns)
{
	char num[32], bound[32];
	double excess;

	if (v >= lo && v <= hi) {
		snprintf(num, sizeof(num), fmt, v);
		fprintf(out, "ratio %s=%s%s\n", name, num, how);
		return 0;
	}
	excess = (v < lo ? lo - v : v - hi) * ns_per_unit;
	if (v == v && excess <= noise_ns) {
		snprintf(num, sizeof(num), fmt, v);
		snprintf(bound, sizeof(bound), fmt, v < lo ? lo : hi);
		fprintf(out, "ratio %s=%s%s (measured %s: within the rounds' spread of "
			"+-%.2f ns per call)\n", name, bound, how, num, noise_ns);
		return 0;
	}
	fprintf(out, "ratio %s=noisy (too noisy to measure: its cases' rounds spread by "
		"+-%.2f ns per call, as much as the difference it needs)\n", name, noise_ns);
	return 1;
}

notrace double bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

#define MAX_CHUNKS 4096
notrace double bench_time_calls(long (*fn)(long), long n, long *acc)
{
	long (*volatile f)(long) = fn;
	double t[MAX_CHUNKS];
	long sum = 0, i = 0;
	int k = 0;

	while (i < n && k < MAX_CHUNKS) {
		long end = i + BENCH_CHUNK < n ? i + BENCH_CHUNK : n;
		double t0 = bench_now_ns();

		for (long j = i; j < end; j++)
			sum += f(j);
		t[k++] = (bench_now_ns() - t0) / (double)(end - i);
		i = end;
	}
	if (acc)
		*acc = sum;
	qsort(t, k, sizeof(*t), cmp_double);
	return t[k / 2];
}

notrace void bench_minmax(const double *v, int n, double *min, double *max)
{
	*min = *max = n > 0 ? v[0] : 0;
	for (int i = 1; i < n; i++) {
		if (v[i] < *min)
			*min = v[i];
		if (v[i] > *max)
			*max = v[i];
	}
}
