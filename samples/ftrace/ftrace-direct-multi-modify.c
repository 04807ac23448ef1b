// SPDX-License-Identifier: MIT
/*
 * ftrace-direct-multi-modify - a userspace port of the kernel's
 * samples/ftrace/ftrace-direct-multi-modify.c, written from its
 * description.
 *
 * ftrace-direct-multi plus ftrace-direct-modify: one direct ops filtered to
 * my_wake_up() and my_schedule() starts on my_tramp1; a second thread moves
 * both sites at once to my_tramp2, back to my_tramp1 and so on with
 * modify_ftrace_direct() every --ms milliseconds (2 by default) for --seconds
 * (1 by default), while the main thread calls the two functions in turn.
 * Each trampoline (ftrace-direct-multi-modify-x86_64.S) passes its return
 * address (site + 5) to its helper, which names the function with
 * usft_kallsyms_lookup(ret - 5, NULL) and counts per trampoline and function.
 *
 * Exit status 0 iff, for each function, the calls while attached equal its
 * hits on my_tramp1 plus its hits on my_tramp2, both trampolines were
 * reached, every hit named a known function at its own site, nothing fired
 * after unregister_ftrace_direct(), no modify_ftrace_direct() failed and the
 * functions returned the right values.
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

/* size of the patched instruction: the return address is site + 5 (x86-64), + 4 (arm64) */
#if defined(__aarch64__)
#define MCOUNT_INSN_SIZE 4
#else
#define MCOUNT_INSN_SIZE 5
#endif

enum { TASK_RUNNING, TASK_INTERRUPTIBLE };

struct task {
	const char *name;
	int state;
};

/* The trampolines (assembly); call mode. */
extern void my_tramp1(void);
extern void my_tramp2(void);

void my_direct_func1(unsigned long ret);
void my_direct_func2(unsigned long ret);
int my_wake_up(struct task *t);
unsigned long my_schedule(void);

enum { F_WAKE_UP, F_SCHEDULE, NR_FUNCS };

static const char *const func_names[NR_FUNCS] = { "my_wake_up", "my_schedule" };
static unsigned long func_sites[NR_FUNCS];

static bool quiet;
static unsigned int period_ms = 2;
static double seconds = 1.0;

/* only the main thread calls the traced functions: plain counters suffice */
static unsigned long hits[2][NR_FUNCS];
static unsigned long hits_unknown, hits_bad_site;

static notrace void count_hit(int tramp, unsigned long ret)
{
	unsigned long site = ret - MCOUNT_INSN_SIZE;
	const char *name = usft_kallsyms_lookup(site, NULL);
	int f;

	for (f = 0; f < NR_FUNCS; f++)
		if (name && !strcmp(name, func_names[f]))
			break;
	if (f == NR_FUNCS) {
		hits_unknown++;
		return;
	}
	hits[tramp][f]++;
	if (site != func_sites[f])
		hits_bad_site++;
}

notrace void my_direct_func1(unsigned long ret)
{
	count_hit(0, ret);
	CLOBBER_ARG_REGS();
}

notrace void my_direct_func2(unsigned long ret)
{
	count_hit(1, ret);
	CLOBBER_ARG_REGS();
}

/* wake_up_process(): 1 if the task was woken, 0 if it was already running. */
TRACEE int my_wake_up(struct task *t)
{
	if (t->state == TASK_RUNNING)
		return 0;
	t->state = TASK_RUNNING;
	return 1;
}

unsigned long nr_switches;

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

/* The kernel sample's kthread: move every site to the other trampoline. */
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
			printf("flip %lu: both sites %s -> %s\n", flips + 1, tramp_name(cur),
			       tramp_name(next));
		cur = next;
		flips++;
	}
	cur_tramp = cur;
	atomic_store(&stop, true);
	return NULL;
}

/* one my_wake_up() and one my_schedule(); returns the wrong results */
static notrace unsigned int call_both(struct task *t)
{
	unsigned long sw = nr_switches;
	unsigned int bad = 0;

	t->state = TASK_INTERRUPTIBLE;
	if (my_wake_up(t) != 1 || t->state != TASK_RUNNING)
		bad++;
	if (my_schedule() != sw + 1)
		bad++;
	return bad;
}

static notrace void usage(FILE *out)
{
	fprintf(out,
		"usage: ftrace-direct-multi-modify [--ms N] [--seconds S] [--quiet]\n"
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
	struct task task = { "kworker/0:1", TASK_INTERRUPTIBLE };
	unsigned long calls = 0, wrong = 0, after, t1, t2;
	unsigned long sum[NR_FUNCS];
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
				fprintf(stderr, "ftrace-direct-multi-modify: --ms: bad value '%s'\n",
					optarg);
				return 2;
			}
			period_ms = (unsigned int)v;
			break;
		}
		case OPT_SECONDS:
			errno = 0;
			seconds = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(seconds > 0) || seconds > 3600) {
				fprintf(stderr, "ftrace-direct-multi-modify: --seconds: bad value '%s'\n",
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
	func_sites[F_WAKE_UP] = ftrace_location((unsigned long)my_wake_up);
	func_sites[F_SCHEDULE] = ftrace_location((unsigned long)my_schedule);
	if (!func_sites[F_WAKE_UP] || !func_sites[F_SCHEDULE]) {
		fprintf(stderr, "ftrace-direct-multi-modify: the traced functions have no patch site\n");
		return 1;
	}

	ret = ftrace_set_filter_ip(&direct, (unsigned long)my_wake_up, 0, 0);
	if (!ret)
		ret = ftrace_set_filter_ip(&direct, (unsigned long)my_schedule, 0, 0);
	if (ret) {
		fprintf(stderr, "ftrace-direct-multi-modify: ftrace_set_filter_ip: %s\n",
			strerror(-ret));
		return 1;
	}
	cur_tramp = (unsigned long)my_tramp1;
	ret = register_ftrace_direct(&direct, cur_tramp);
	if (ret) {
		fprintf(stderr, "ftrace-direct-multi-modify: register_ftrace_direct: %s\n",
			strerror(-ret));
		return 1;
	}
	if (!quiet)
		printf("my_wake_up, my_schedule -> my_tramp1; retarget every %u ms for %g s\n",
		       period_ms, seconds);

	t0 = now_s();
	ret = pthread_create(&thread, NULL, flipper, NULL);
	if (ret) {
		fprintf(stderr, "ftrace-direct-multi-modify: pthread_create: %s\n", strerror(ret));
		unregister_ftrace_direct(&direct, cur_tramp, true);
		return 1;
	}
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		wrong += call_both(&task);
		calls++;
	}
	pthread_join(thread, NULL);
	elapsed = now_s() - t0;

	/* unregister names the current target (as the kernel sample's exit does) */
	ret = unregister_ftrace_direct(&direct, cur_tramp, true);
	if (ret) {
		fprintf(stderr, "ftrace-direct-multi-modify: unregister_ftrace_direct: %s\n",
			strerror(-ret));
		return 1;
	}
	for (int f = 0; f < NR_FUNCS; f++)
		sum[f] = hits[0][f] + hits[1][f];
	after = sum[F_WAKE_UP] + sum[F_SCHEDULE] + hits_unknown;
	for (int i = 0; i < 1000; i++)
		wrong += call_both(&task);
	after = hits[0][F_WAKE_UP] + hits[0][F_SCHEDULE] + hits[1][F_WAKE_UP] +
		hits[1][F_SCHEDULE] + hits_unknown - after;

	if (flip_errors)
		fprintf(stderr, "ftrace-direct-multi-modify: %lu modify_ftrace_direct() failures, first: %s\n",
			flip_errors, strerror(-first_error));
	t1 = hits[0][F_WAKE_UP] + hits[0][F_SCHEDULE];
	t2 = hits[1][F_WAKE_UP] + hits[1][F_SCHEDULE];
	ok = sum[F_WAKE_UP] == calls && sum[F_SCHEDULE] == calls && t1 && t2 && !after &&
	     !hits_unknown && !hits_bad_site && !wrong && !flip_errors;
	if (!quiet) {
		printf("             my_tramp1  my_tramp2  calls\n");
		for (int f = 0; f < NR_FUNCS; f++)
			printf("%-11s  %9lu  %9lu  %lu\n", func_names[f], hits[0][f], hits[1][f], calls);
	}
	printf("ftrace-direct-multi-modify: %lu retargets in %.2f s, %lu calls of each function: "
	       "my_tramp1 %lu, my_tramp2 %lu (per function sums %s), unknown %lu, wrong site %lu, "
	       "%lu after detach, %lu wrong results: %s\n",
	       flips, elapsed, calls, t1, t2,
	       sum[F_WAKE_UP] == calls && sum[F_SCHEDULE] == calls ? "ok" : "MISMATCH",
	       hits_unknown, hits_bad_site, after, wrong, ok ? "OK" : "FAIL");
	return ok ? 0 : 1;
}
