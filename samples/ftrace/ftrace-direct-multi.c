// SPDX-License-Identifier: MIT
/*
 * ftrace-direct-multi - a userspace port of the kernel's
 * samples/ftrace/ftrace-direct-multi.c, written from its description.
 *
 * One direct ops filtered to two functions, my_wake_up() and my_schedule()
 * (wake_up_process() and schedule() look-alikes), and one trampoline
 * (my_tramp, ftrace-direct-multi-x86_64.S) for both.  The trampoline passes
 * its own return address, the site + 5, to my_direct_func(), which maps
 * site = ret - 5 back to the function's name with usft_kallsyms_lookup() and
 * reports which function fired.
 *
 * Exit status 0 only if every call while attached was reported once, under
 * the right name and site, none before attaching or after detaching, and the
 * traced functions returned the right values throughout.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The trampoline (assembly); call mode. */
extern void my_tramp(void);

void my_direct_func(unsigned long ret);
int my_wake_up(struct task *t);
unsigned long my_schedule(void);

enum { F_WAKE_UP, F_SCHEDULE, NR_FUNCS };

static const char *const func_names[NR_FUNCS] = { "my_wake_up", "my_schedule" };
static unsigned long func_sites[NR_FUNCS];

static bool quiet;
static unsigned long hits[NR_FUNCS];
static unsigned long hits_unknown, hits_bad_site;

notrace void my_direct_func(unsigned long ret)
{
	unsigned long site = ret - MCOUNT_INSN_SIZE;
	const char *name = usft_kallsyms_lookup(site, NULL);
	int f;

	for (f = 0; f < NR_FUNCS; f++)
		if (name && !strcmp(name, func_names[f]))
			break;
	if (f == NR_FUNCS) {
		hits_unknown++;
	} else {
		hits[f]++;
		if (site != func_sites[f])
			hits_bad_site++;
	}
	if (!quiet)
		printf("  my_direct_func: %s fired (site %#lx)\n", name ? name : "?", site);
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

#define ROUNDS 3u

/* ROUNDS x (wake up a sleeping task, schedule); returns the wrong results. */
static notrace unsigned int run(const char *phase)
{
	static struct task tasks[ROUNDS] = {
		{ "kworker/0:1" }, { "ksoftirqd/1" }, { "rcu_sched" },
	};
	unsigned int bad = 0;

	if (!quiet)
		printf("%s:\n", phase);
	for (unsigned int i = 0; i < ROUNDS; i++) {
		unsigned long sw = nr_switches;
		int woke;

		tasks[i].state = TASK_INTERRUPTIBLE;
		woke = my_wake_up(&tasks[i]);
		if (woke != 1 || tasks[i].state != TASK_RUNNING)
			bad++;
		if (!quiet)
			printf("  my_wake_up(%s) = %d\n", tasks[i].name, woke);
		if (my_schedule() != sw + 1)
			bad++;
		if (!quiet)
			printf("  my_schedule() = %lu\n", nr_switches);
	}
	return bad;
}

static notrace void usage(FILE *out)
{
	fprintf(out, "usage: ftrace-direct-multi [--quiet]\n");
}

notrace int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	unsigned long before, during[NR_FUNCS], after;
	unsigned int bad = 0;
	int opt, ret;
	bool ok;

	while ((opt = getopt_long(argc, argv, "qh", longopts, NULL)) != -1) {
		switch (opt) {
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
		fprintf(stderr, "ftrace-direct-multi: the traced functions have no patch site\n");
		return 1;
	}

	bad += run("not attached");
	before = hits[F_WAKE_UP] + hits[F_SCHEDULE] + hits_unknown;

	/* the kernel sample: two ftrace_set_filter_ip() calls, one register */
	ret = ftrace_set_filter_ip(&direct, (unsigned long)my_wake_up, 0, 0);
	if (!ret)
		ret = ftrace_set_filter_ip(&direct, (unsigned long)my_schedule, 0, 0);
	if (ret) {
		fprintf(stderr, "ftrace-direct-multi: ftrace_set_filter_ip: %s\n", strerror(-ret));
		return 1;
	}
	ret = register_ftrace_direct(&direct, (unsigned long)my_tramp);
	if (ret) {
		fprintf(stderr, "ftrace-direct-multi: register_ftrace_direct: %s\n", strerror(-ret));
		return 1;
	}

	bad += run("attached to both");
	during[F_WAKE_UP] = hits[F_WAKE_UP];
	during[F_SCHEDULE] = hits[F_SCHEDULE];

	ret = unregister_ftrace_direct(&direct, (unsigned long)my_tramp, true);
	if (ret) {
		fprintf(stderr, "ftrace-direct-multi: unregister_ftrace_direct: %s\n", strerror(-ret));
		return 1;
	}

	bad += run("detached");
	after = hits[F_WAKE_UP] + hits[F_SCHEDULE] + hits_unknown -
		during[F_WAKE_UP] - during[F_SCHEDULE];

	ok = !bad && !before && !after && !hits_unknown && !hits_bad_site &&
	     during[F_WAKE_UP] == ROUNDS && during[F_SCHEDULE] == ROUNDS;
	printf("ftrace-direct-multi: one trampoline, two functions: my_wake_up fired %lu/%u, "
	       "my_schedule %lu/%u, unknown %lu, wrong site %lu; %lu before attach, "
	       "%lu after detach, %u wrong results: %s\n",
	       during[F_WAKE_UP], ROUNDS, during[F_SCHEDULE], ROUNDS, hits_unknown,
	       hits_bad_site, before, after, bad, ok ? "OK" : "FAIL");
	return ok ? 0 : 1;
}
