// SPDX-License-Identifier: MIT
/*
 * usft-bench-floor - what a traced call costs against the cheapest
 * timestamped event this machine can make, in the same run:
 *
 *   untraced     bench_plain(): a patchable function no tool is asked for
 *   floor_event  a function whose entry calls an out-of-line stub that
 *                reads the cycle counter and stores 16 bytes (timestamp,
 *                ip) into a per-thread buffer: a function tracer's limit
 *   floor_pair   the same stub called at entry and at exit (two events):
 *                the limit of an entry/exit (function_graph) tracer
 *   traced       bench_traced(): the same body as bench_plain, the one
 *                function the tool around this process traces
 *                (`usft record -p function -l bench_traced`, `uftrace
 *                record -P bench_traced`); untraced when no tool runs
 *
 * Each case runs with 1 thread and with 2 threads calling at once (each
 * thread timed on its own: the per-call cost of one thread), cases and
 * thread counts interleaved round after round, medians printed (each
 * sample itself the median of its chunks of calls: bench_time_calls())).  The
 * program links nothing of usft: every tool sees the same binary.
 * --tool NAME only labels the lines (bench/floor.sh runs it under each).
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cpu.h"
#include "ratio.h"

#define notrace __attribute__((patchable_function_entry(0, 0)))
#define MAX_THREADS 2
#define FLOOR_WORDS 4096		/* 64 KiB per thread: stays in L2 */

/* the floor's per-thread buffer: 16-byte events, index wraps */
struct floor_buf {
	uint64_t w[FLOOR_WORDS];
	unsigned long i;
};
static __thread struct floor_buf fbuf __attribute__((aligned(64)));

static inline __attribute__((always_inline)) uint64_t floor_cycles(void)
{
#if defined(__x86_64__)
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
#elif defined(__aarch64__)
	uint64_t v;

	__asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
	return v;
#else
	return 0;
#endif
}

/* one timestamped event: counter read + one 16-byte store, nothing else */
notrace __attribute__((noinline)) void floor_ev(unsigned long ip)
{
	struct floor_buf *b = &fbuf;
	unsigned long i = b->i;

	b->w[i] = floor_cycles();
	b->w[i + 1] = ip;
	b->i = (i + 2) & (FLOOR_WORDS - 1);
}

TRACEE long bench_plain(long x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

TRACEE long bench_traced(long x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

notrace __attribute__((noinline)) long floor_event_fn(long x)
{
	floor_ev((unsigned long)floor_event_fn);
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

notrace __attribute__((noinline)) long floor_pair_fn(long x)
{
	floor_ev((unsigned long)floor_pair_fn);
	__asm__ volatile("" ::: "memory");
	floor_ev((unsigned long)floor_pair_fn | 1);
	return x + 1;
}

struct fcase {
	const char *name;
	long (*fn)(long);
	double samples[MAX_THREADS][64];	/* [threads-1][round]: ns per call per thread */
};

static struct fcase cases[] = {
	{ "untraced", bench_plain },
	{ "floor_event", floor_event_fn },
	{ "floor_pair", floor_pair_fn },
	{ "traced", bench_traced },
};
#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

static long calls;
static pthread_barrier_t go, done;
static long (*volatile cur_fn)(long);
static int cur_threads;
static double thread_ns[MAX_THREADS];
static volatile int quit;

static notrace double time_calls(long (*fn)(long), long n)
{
	long acc;
	double ns = bench_time_calls(fn, n, &acc);

	if (acc != n * (n - 1) / 2 + n) {
		fprintf(stderr, "usft-bench-floor: wrong results while timing\n");
		exit(1);
	}
	return ns;
}

static notrace int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* thread @id: one sample of cur_fn per go, while id < cur_threads */
static notrace void *worker(void *arg)
{
	int id = (int)(long)arg;

	for (;;) {
		pthread_barrier_wait(&go);
		if (quit)
			return NULL;
		if (id < cur_threads) {
			time_calls(cur_fn, calls / 20 + 1);	/* warm up */
			thread_ns[id] = time_calls(cur_fn, calls);
		}
		pthread_barrier_wait(&done);
	}
}

static notrace double run_sample(long (*fn)(long), int threads)
{
	double sum = 0;

	cur_fn = fn;
	cur_threads = threads;
	pthread_barrier_wait(&go);
	pthread_barrier_wait(&done);
	for (int t = 0; t < threads; t++)
		sum += thread_ns[t];
	return sum / threads;
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
	const char *tool = "none";
	double scale = 1.0;
	int rounds = 7, max_threads = MAX_THREADS, i, r, t;
	pthread_t th[MAX_THREADS];

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--scale") && i + 1 < argc)
			scale = atof(argv[++i]);
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			max_threads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--tool") && i + 1 < argc)
			tool = argv[++i];
		else {
			fprintf(stderr, "usage: usft-bench-floor [--scale F] [--rounds N] "
				"[--threads 1|2] [--tool NAME]\n");
			return 2;
		}
	}
	if (rounds < 1 || rounds > 64)
		rounds = 7;
	if (max_threads < 1 || max_threads > MAX_THREADS)
		max_threads = MAX_THREADS;
	calls = (long)(400000 * scale);
	if (calls < 1000)
		calls = 1000;

	pthread_barrier_init(&go, NULL, MAX_THREADS + 1);
	pthread_barrier_init(&done, NULL, MAX_THREADS + 1);
	for (t = 0; t < MAX_THREADS; t++)
		if (pthread_create(&th[t], NULL, worker, (void *)(long)t)) {
			fprintf(stderr, "usft-bench-floor: pthread_create failed\n");
			return 1;
		}

	bench_print_cpu(stdout, "usft-bench-floor");
	printf("# usft-bench-floor: tool=%s, %ld calls per sample and thread, %d rounds, "
	       "cases and thread counts interleaved\n", tool, calls, rounds);
	for (r = 0; r < rounds; r++) {
		for (i = 0; i < NCASES; i++)
			for (t = 1; t <= max_threads; t++)
				cases[i].samples[t - 1][r] = run_sample(cases[i].fn, t);
		fprintf(stderr, "round %d/%d\n", r + 1, rounds);
	}
	quit = 1;
	pthread_barrier_wait(&go);
	for (t = 0; t < MAX_THREADS; t++)
		pthread_join(th[t], NULL);

	for (t = 1; t <= max_threads; t++) {
		double base = median(cases[0].samples[t - 1], rounds);
		double e_base = bench_spread(cases[0].samples[t - 1], rounds);
		double ev = median(cases[1].samples[t - 1], rounds) - base;
		double pair = median(cases[2].samples[t - 1], rounds) - base;
		double tr = median(cases[3].samples[t - 1], rounds) - base;
		double e_ev = e_base + bench_spread(cases[1].samples[t - 1], rounds);
		double e_pair = e_base + bench_spread(cases[2].samples[t - 1], rounds);
		double e_tr = e_base + bench_spread(cases[3].samples[t - 1], rounds);

		for (i = 0; i < NCASES; i++) {
			double m = median(cases[i].samples[t - 1], rounds);

			printf("section=floor case=%s_%dt tool=%s threads=%d ns_per_call=%.2f "
			       "added_ns=%.2f spread_ns=%.2f\n", cases[i].name, t, tool, t, m,
			       m - base, bench_spread(cases[i].samples[t - 1], rounds));
		}
		if (strcmp(tool, "none")) {
			char name[64];

			snprintf(name, sizeof(name), "%s_%dt_traced_per_floor_event", tool, t);
			bench_print_ratio(stdout, name, "%.2f", " (traced_added/floor_event_added)",
					  ev > e_ev ? tr / ev : NAN, 0.0, 1e9, ev, e_tr);
			snprintf(name, sizeof(name), "%s_%dt_traced_per_floor_pair", tool, t);
			bench_print_ratio(stdout, name, "%.2f", " (traced_added/floor_pair_added)",
					  pair > e_pair ? tr / pair : NAN, 0.0, 1e9, pair, e_tr);
		}
	}
	if (max_threads > 1 && strcmp(tool, "none")) {
		/* the traced call's added cost per thread: 2 threads calling against 1 */
		double a1 = median(cases[3].samples[0], rounds) - median(cases[0].samples[0], rounds);
		double a2 = median(cases[3].samples[1], rounds) - median(cases[0].samples[1], rounds);
		double e1 = bench_spread(cases[3].samples[0], rounds) + bench_spread(cases[0].samples[0], rounds);
		double e2 = bench_spread(cases[3].samples[1], rounds) + bench_spread(cases[0].samples[1], rounds);
		char name[64];

		snprintf(name, sizeof(name), "%s_traced_added_2t_per_1t", tool);
		bench_print_ratio(stdout, name, "%.3f", " (added ns per call of one thread, 2 threads / 1)",
				  a1 > e1 ? a2 / a1 : NAN, 0.0, 1e9, a1, e1 + e2);
	}
	return 0;
}
