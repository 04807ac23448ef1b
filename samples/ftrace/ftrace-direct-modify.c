// SPDX-License-Identifier: MIT
/*
 * ftrace-direct-modify - a userspace port of the kernel's
 * samples/ftrace/ftrace-direct-modify.c, written from its description.
 *
 * A direct ops on my_schedule() (a schedule() look-alike) starts on my_tramp1;
 * a second thread retargets it to my_tramp2, back to my_tramp1 and so on with
 * modify_ftrace_direct() every --ms milliseconds (2 by default; the kernel
 * sample's kthread waits 2 s) for --seconds (1 by default), while the main
 * thread calls my_schedule() in a loop.  Each trampoline
 * (ftrace-direct-modify-x86_64.S) calls its own C helper, which counts.
 *
 * Exit status 0 iff every call while attached reached exactly one of the two
 * trampolines (hits1 + hits2 == calls), both were reached, no call reached
 * one after unregister_ftrace_direct(), no modify_ftrace_direct() failed and
 * my_schedule() returned the right value every time.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <usft/common.h>
#include <usft/ftrace.h>
#include <usft/usft.h>

#if defined(__clang__)
#define TRACEE __attribute__((noinline))
#else
#define TRACEE __attribute__((noinline, noipa))
#endif

/* Overwrite every integer argument register. */
#if defined(__x86_64__)
#define CLOBBER_ARG_REGS()							\
	__asm__ volatile("mov $-1, %%rdi\n\tmov $-1, %%rsi\n\tmov $-1, %%rdx\n\t"	\
			 "mov $-1, %%rcx\n\tmov $-1, %%r8\n\tmov $-1, %%r9"	\
			 ::: "rdi", "rsi", "rdx", "rcx", "r8", "r9")
#elif defined(__aarch64__)
#define CLOBBER_ARG_REGS()							\
	__asm__ volatile("mov x0, #-1\n\tmov x1, #-1\n\tmov x2, #-1\n\tmov x3, #-1\n\t"	\
			 "mov x4, #-1\n\tmov x5, #-1\n\tmov x6, #-1\n\tmov x7, #-1"	\
			 ::: "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7")
#else
#define CLOBBER_ARG_REGS() do { } while (0)
#endif

/* The trampolines (assembly); call mode. */
extern void my_tramp1(void);
extern void my_tramp2(void);

void my_direct_func1(void);
void my_direct_func2(void);
unsigned long my_schedule(void);

static bool quiet;
static unsigned int period_ms = 2;
static double seconds = 1.0;

/* only the main thread calls my_schedule(): plain counters suffice */
static unsigned long hits1, hits2;
unsigned long nr_switches;

notrace void my_direct_func1(void)
{
	hits1++;
	CLOBBER_ARG_REGS();
}

notrace void my_direct_func2(void)
{
	hits2++;
	CLOBBER_ARG_REGS();
}

/* schedule(): one more context switch. */
TRACEE unsigned long my_schedule(void)
{
	return ++nr_switches;
}

static struct ftrace_ops direct;
static atomic_bool stop;
static unsigned long flips, flip_errors;
static unsigned long cur_tramp;		/* the flipper's; read after the join */
static int first_error;

static notrace double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static notrace const char *tramp_name(unsigned long addr)
{
	return addr == (unsigned long)my_tramp1 ? "my_tramp1" : "my_tramp2";
}

/* The kernel sample's kthread: flip between the two trampolines. */
static notrace void *flipper(void *arg)
{
	struct timespec period = {
		.tv_sec = period_ms / 1000,
		.tv_nsec = (long)(period_ms % 1000) * 1000000L,
	};
	unsigned long cur = cur_tramp;
	double deadline = now_s() + seconds;

	while (now_s() < deadline) {
		unsigned long next = cur == (unsigned long)my_tramp1 ?
				     (unsigned long)my_tramp2 : (unsigned long)my_tramp1;
		int ret;

		if (period_ms)
			nanosleep(&period, NULL);
		ret = modify_ftrace_direct(&direct, next);
		if (ret) {
			/* the kernel sample WARNs and keeps going */
			if (!flip_errors++)
				first_error = ret;
			continue;
		}
		if (!quiet && flips < 3)
			printf("flip %lu: %s -> %s\n", flips + 1, tramp_name(cur), tramp_name(next));
		cur = next;
		flips++;
	}
	cur_tramp = cur;
	atomic_store(&stop, true);
	return NULL;
}

static notrace void usage(FILE *out)
{
	fprintf(out,
		"usage: ftrace-direct-modify [--ms N] [--seconds S] [--quiet]\n"
		"  --ms N        milliseconds between two retargets (2; 0: back to back)\n"
		"  --seconds S   how long to keep retargeting (1)\n"
		"  --quiet       only the summary line\n");
}

enum { OPT_MS = 256, OPT_SECONDS };

notrace int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "ms", required_argument, NULL, OPT_MS },
		{ "seconds", required_argument, NULL, OPT_SECONDS },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	unsigned long calls = 0, wrong = 0, after, ret_val;
	pthread_t thread;
	double t0, elapsed;
	char *end;
	int opt, ret;
	bool ok;

	while ((opt = getopt_long(argc, argv, "qh", longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_MS: {
			unsigned long v;

			errno = 0;
			v = strtoul(optarg, &end, 0);
			if (errno || end == optarg || *end || *optarg == '-' || v > 60000) {
				fprintf(stderr, "ftrace-direct-modify: --ms: bad value '%s'\n", optarg);
				return 2;
			}
			period_ms = (unsigned int)v;
			break;
		}
		case OPT_SECONDS:
			errno = 0;
			seconds = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(seconds > 0) || seconds > 3600) {
				fprintf(stderr, "ftrace-direct-modify: --seconds: bad value '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (!ftrace_location((unsigned long)my_schedule)) {
		fprintf(stderr, "ftrace-direct-modify: my_schedule has no patch site\n");
		return 1;
	}

	ret = ftrace_set_filter_ip(&direct, (unsigned long)my_schedule, 0, 0);
	if (ret) {
		fprintf(stderr, "ftrace-direct-modify: ftrace_set_filter_ip: %s\n", strerror(-ret));
		return 1;
	}
	cur_tramp = (unsigned long)my_tramp1;
	ret = register_ftrace_direct(&direct, cur_tramp);
	if (ret) {
		fprintf(stderr, "ftrace-direct-modify: register_ftrace_direct: %s\n", strerror(-ret));
		return 1;
	}
	if (!quiet)
		printf("my_schedule -> my_tramp1; retarget every %u ms for %g s\n", period_ms,
		       seconds);

	t0 = now_s();
	ret = pthread_create(&thread, NULL, flipper, NULL);
	if (ret) {
		fprintf(stderr, "ftrace-direct-modify: pthread_create: %s\n", strerror(ret));
		unregister_ftrace_direct(&direct, (unsigned long)my_tramp1, true);
		return 1;
	}
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		ret_val = my_schedule();
		if (ret_val != ++calls)
			wrong++;
	}
	pthread_join(thread, NULL);
	elapsed = now_s() - t0;

	/* unregister names the current target (as the kernel sample's exit does) */
	ret = unregister_ftrace_direct(&direct, cur_tramp, true);
	if (ret) {
		fprintf(stderr, "ftrace-direct-modify: unregister_ftrace_direct: %s\n",
			strerror(-ret));
		return 1;
	}
	after = hits1 + hits2;
	for (int i = 0; i < 1000; i++) {
		ret_val = my_schedule();
		if (ret_val != ++calls)
			wrong++;
	}
	after = hits1 + hits2 - after;

	if (flip_errors)
		fprintf(stderr, "ftrace-direct-modify: %lu modify_ftrace_direct() failures, first: %s\n",
			flip_errors, strerror(-first_error));
	calls -= 1000;
	ok = hits1 + hits2 == calls && hits1 && hits2 && !after && !wrong && !flip_errors;
	printf("ftrace-direct-modify: %lu retargets in %.2f s, %lu calls: my_tramp1 %lu, "
	       "my_tramp2 %lu (sum %s), %lu after detach, %lu wrong results: %s\n",
	       flips, elapsed, calls, hits1, hits2, hits1 + hits2 == calls ? "ok" : "MISMATCH",
	       after, wrong, ok ? "OK" : "FAIL");
	return ok ? 0 : 1;
}
