// SPDX-License-Identifier: MIT
/*
 * The peers' common workload: a noinline work() called N times in a loop;
 * prints the in-process loop time per call (median of R repeats), so every
 * tool is measured on the same code, whatever it adds around the process.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif
__attribute__((noinline)) long work(long x);
#ifdef __cplusplus
}
#endif

__attribute__((noinline)) long work(long x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

#ifdef PEER_SETUP
#ifdef __cplusplus
extern "C"
#endif
void peer_setup(void);
#endif

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2000000;
	int r = argc > 2 ? atoi(argv[2]) : 5;
	double t[64];
	long acc = 0;

#ifdef PEER_SETUP
	peer_setup();
#endif
	if (r < 1 || r > 64)
		r = 5;
	for (int k = 0; k < r; k++) {
		long (*volatile fn)(long) = work;
		double t0 = now_ns();

		for (long i = 0; i < n; i++)
			acc += fn(i);
		t[k] = (now_ns() - t0) / n;
	}
	qsort(t, r, sizeof(double), cmpd);
	printf("ns_per_call=%.2f check=%ld\n", t[r / 2], acc);
	return 0;
}
