// SPDX-License-Identifier: MIT
/*
 * bench/test_ratio.c - the benchmarks' ratio lines (bench/ratio.c): a value
 * in range is printed as it is, one just outside (within the rounds'
 * spread) as its bound with what was measured, one further out or with a
 * lost denominator as "noisy" - never a negative cost.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <criterion/criterion.h>
#include "ratio.h"

static char *line(int *noisy, double v, double lo, double hi, double unit, double noise)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert(f);
	*noisy = bench_print_ratio(f, "x", "%.2f", " (a-b)", v, lo, hi, unit, noise);
	fclose(f);
	return buf;
}

Test(bench_ratio, spread_leaves_out_the_outer_quarters)
{
	double five[] = { 10, 11, 12, 13, 100 };	/* one disturbed round */
	double one[] = { 7 };

	cr_expect_float_eq(bench_spread(five, 5), 1.0, 1e-9);
	cr_expect_float_eq(bench_spread(one, 1), 0.0, 1e-9);
}

Test(bench_ratio, in_range_is_printed_as_is)
{
	int noisy;
	char *s = line(&noisy, 3.5, 0, 1e9, 15, 0.1);

	cr_expect_str_eq(s, "ratio x=3.50 (a-b)\n");
	cr_expect_eq(noisy, 0);
	free(s);
}

Test(bench_ratio, just_below_zero_is_zero_within_the_noise)
{
	int noisy;
	char *s = line(&noisy, -0.07, 0, 1e9, 15, 2.0);	/* -1.05 ns of a 2 ns spread */

	cr_expect_str_eq(s, "ratio x=0.00 (a-b) (measured -0.07: within the rounds' spread of "
			 "+-2.00 ns per call)\n");
	cr_expect_eq(noisy, 0);
	free(s);
}

Test(bench_ratio, far_outside_or_nan_says_noisy)
{
	int noisy;
	char *s = line(&noisy, -1.0, 0, 1e9, 15, 2.0);	/* -15 ns: beyond the spread */

	cr_expect_str_eq(s, "ratio x=noisy (too noisy to measure: its cases' rounds spread by "
			 "+-2.00 ns per call, as much as the difference it needs)\n");
	cr_expect_eq(noisy, 1);
	free(s);
	s = line(&noisy, NAN, 0, 100, 1, 0.5);
	cr_expect_eq(noisy, 1);
	free(s);
}
