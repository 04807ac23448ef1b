// SPDX-License-Identifier: MIT
/*
 * bench/scale.c - the runtime against many sites: linked with a generated
 * file of N patchable functions (bench/scale.sh), it times usft_init()
 * (every object's records, symbols), measures the memory the runtime took
 * for them, and times enabling one ops on every site (the function
 * tracer's registration, an empty callback) and disabling it, R times,
 * medians, in wall and in CPU time; and the CPU time the process spent
 * before main() (the dynamic loader, and libusft's constructor converting
 * gcc's NOPs of every site), and the minor page faults of each part.
 * One line: "section=scale case=sites_N ...".
 */
#include <errno.h>
#include <stdbool.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <usft/ftrace.h>
#include <usft/usft.h>
#include "cpu.h"

extern long scale_call_all(long x);	/* generated: calls every function once */

static notrace double ms_of(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * Wall time and the process's CPU time: on a machine other jobs load, the
 * CPU time is the figure (the wall time carries every preemption).
 */
struct span {
	double wall, cpu;
};

static notrace struct span now(void)
{
	return (struct span){ ms_of(CLOCK_MONOTONIC), ms_of(CLOCK_PROCESS_CPUTIME_ID) };
}

static notrace struct span since(struct span t0)
{
	struct span t = now();

	return (struct span){ t.wall - t0.wall, t.cpu - t0.cpu };
}

/* minor page faults of the process so far */
static notrace long minflt(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_SELF, &ru) ? 0 : ru.ru_minflt;
}

/* resident and heap bytes of the process */
static notrace void mem(long *rss, long *heap)
{
	long pages = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "re");
	struct mallinfo2 mi = mallinfo2();

	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &res) != 2)
			res = 0;
		fclose(f);
	}
	*rss = res * sysconf(_SC_PAGESIZE);
	*heap = (long)(mi.uordblks + mi.hblkhd);
}

static notrace void empty_cb(unsigned long ip, unsigned long pip, struct ftrace_ops *op,
			     struct ftrace_regs *fregs)
{
}

static notrace int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static notrace double median_of(const struct span *v, int n, bool cpu)
{
	double t[32];

	for (int i = 0; i < n; i++)
		t[i] = cpu ? v[i].cpu : v[i].wall;
	qsort(t, n, sizeof(*t), cmpd);
	return t[n / 2];
}

static notrace double median_wall(const struct span *v, int n)
{
	return median_of(v, n, false);
}

static notrace double median_cpu(const struct span *v, int n)
{
	return median_of(v, n, true);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 5;
	static struct ftrace_ops ops = { .func = empty_cb };
	struct usft_stats st = { .sz = sizeof(st) };
	struct span t0, init, en[32], dis[32];
	double pre_main = ms_of(CLOCK_PROCESS_CPUTIME_ID);
	long pre_main_flt = minflt(), flt0, init_flt;
	long rss0, heap0, rss1, heap1;
	int r;

	if (rounds < 1 || rounds > 32)
		rounds = 5;
	/* the program's own pages touched first, so the delta is the runtime's */
	scale_call_all(0);
	mem(&rss0, &heap0);
	flt0 = minflt();
	t0 = now();
	r = usft_init();
	init = since(t0);
	init_flt = minflt() - flt0;
	if (r) {
		fprintf(stderr, "usft-bench-scale: usft_init: %s\n", strerror(-r));
		return 1;
	}
	mem(&rss1, &heap1);
	usft_stat(&st);
	for (int i = 0; i < rounds; i++) {
		t0 = now();
		r = register_ftrace_function(&ops);
		en[i] = since(t0);
		if (r) {
			fprintf(stderr, "usft-bench-scale: register_ftrace_function: %s\n", strerror(-r));
			return 1;
		}
		if (scale_call_all(1) == 0)
			return 1;
		t0 = now();
		r = unregister_ftrace_function(&ops);
		dis[i] = since(t0);
		if (r) {
			fprintf(stderr, "usft-bench-scale: unregister_ftrace_function: %s\n", strerror(-r));
			return 1;
		}
	}
	bench_print_cpu(stdout, "usft-bench-scale");
	printf("section=scale case=sites_%lu sites=%lu init_ms=%.2f init_cpu_ms=%.2f "
	       "rss_bytes_per_site=%.1f heap_bytes_per_site=%.1f enable_all_ms=%.2f "
	       "enable_all_cpu_ms=%.2f disable_all_ms=%.2f disable_all_cpu_ms=%.2f "
	       "pre_main_cpu_ms=%.2f init_minflt=%ld pre_main_minflt=%ld rounds=%d\n",
	       st.nr_sites, st.nr_sites, init.wall, init.cpu,
	       (double)(rss1 - rss0) / st.nr_sites, (double)(heap1 - heap0) / st.nr_sites,
	       median_wall(en, rounds), median_cpu(en, rounds), median_wall(dis, rounds),
	       median_cpu(dis, rounds), pre_main, init_flt, pre_main_flt, rounds);
	return 0;
}
