/* SPDX-License-Identifier: MIT */
/* bench/ratio.h - ratios of medians with their noise (bench/ratio.c). */
#ifndef USFT_BENCH_RATIO_H
#define USFT_BENCH_RATIO_H

#include <stdio.h>

/* a benchmarked function: a real call the compiler neither inlines nor
 * folds (gcc: noipa), kept in the binary when nothing else refers to it */
#if defined(__clang__)
#define TRACEE __attribute__((noinline, used))
#else
#define TRACEE __attribute__((noinline, noipa, used))
#endif

/* the smallest and largest of @n (1-64) samples: every figure's spread in the plots */
void bench_minmax(const double *v, int n, double *min, double *max);

/* half the inter-quartile spread of @n (1-64) samples, in their unit */
double bench_spread(const double *v, int n);

/*
 * Print "ratio NAME=VALUE HOW" on @out, or the bound with what was measured
 * when @v is outside [@lo, @hi] by no more than @noise_ns (@ns_per_unit:
 * ns per call per unit of @v), or "ratio NAME=noisy (...)" further out or
 * when @v is NAN.  Return: 1 when it printed "noisy", else 0.
 */
int bench_print_ratio(FILE *out, const char *name, const char *fmt, const char *how,
		      double v, double lo, double hi, double ns_per_unit, double noise_ns);

/* CLOCK_MONOTONIC in ns */
double bench_now_ns(void);

/*
 * bench_time_calls() - ns per call of @n calls of @fn(0..n-1), timed in
 * chunks of BENCH_CHUNK calls and the median chunk returned: on a shared
 * machine a thread is preempted now and then, and a chunk that was is an
 * outlier the median leaves out, where one long timing carries every
 * preemption of the sample.  *@acc (may be NULL) gets the sum of results.
 */
#define BENCH_CHUNK 8192
double bench_time_calls(long (*fn)(long), long n, long *acc);

#endif
