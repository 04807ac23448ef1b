// SPDX-License-Identifier: MIT
/*
 * bench/first_event.c - the latency of a new thread's first recorded event
 * (issue: a thread's first write used to wait while a 2 MiB huge page was
 * zeroed).  Built with the patch flags, not linked with libusft: run it
 * under `usft record` (bench/first_event.sh does, for each ring kind).
 *
 * THREADS threads are started one after the other; each times its first
 * call of a traced function (the callback claims a ring slot and makes its
 * first write) and then its second one (a warm call), and the main thread
 * prints p50/p99/max of both over all threads, in ns, as key=value lines.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__clang__)
#define TRACED __attribute__((noinline, used))
#else
#define TRACED __attribute__((noinline, noipa, used))
#endif
/* everything else untraced: first_traced() is each thread's first event */
#define UNTRACED __attribute__((patchable_function_entry(0, 0)))

static TRACED long first_traced(long x)
{
	__asm__ __volatile__("" ::: "memory");
	return x + 1;
}

static UNTRACED long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

struct sample {
	long long first, warm;
};

static UNTRACED void *thread_main(void *arg)
{
	struct sample *s = arg;
	long long a = now_ns(), b, c;

	first_traced(1);
	b = now_ns();
	first_traced(2);
	c = now_ns();
	s->first = b - a;
	s->warm = c - b;
	return NULL;
}

static UNTRACED int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

static UNTRACED void report(const char *what, long long *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_ll);
	printf("%s_p50_ns=%lld\n%s_p99_ns=%lld\n%s_max_ns=%lld\n", what, v[n / 2], what,
	       v[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1], what, v[n - 1]);
}

UNTRACED int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000;
	struct sample *s;
	long long *first, *warm;

	if (n < 1)
		n = 1;
	s = calloc((size_t)n, sizeof(*s));
	first = calloc((size_t)n, sizeof(*first));
	warm = calloc((size_t)n, sizeof(*warm));
	if (!s || !first || !warm)
		return 1;
	for (int i = 0; i < n; i++) {
		pthread_t t;

		if (pthread_create(&t, NULL, thread_main, &s[i]) || pthread_join(t, NULL))
			return 1;
		first[i] = s[i].first;
		warm[i] = s[i].warm;
	}
	printf("threads=%d\n", n);
	report("first_event", first, n);
	report("warm_event", warm, n);
	free(s);
	free(first);
	free(warm);
	return 0;
}
