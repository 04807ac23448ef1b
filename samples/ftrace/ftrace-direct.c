// SPDX-License-Identifier: MIT
/*
 * ftrace-direct - a userspace port of the kernel's samples/ftrace/ftrace-direct.c,
 * written from its description.
 *
 * One direct trampoline (my_tramp, ftrace-direct-x86_64.S) is attached to
 * my_wake_up(), a wake_up_process() look-alike.  Once attached, the patch site
 * of my_wake_up() calls my_tramp straight (no ftrace_caller in between); the
 * trampoline keeps the task argument, calls my_direct_func() with it and
 * returns into the body of my_wake_up().
 *
 * Exit status 0 only if the helper ran exactly once per call while attached
 * (with the right task), never before or after, and my_wake_up() returned the
 * right value every time.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
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

enum { TASK_RUNNING, TASK_INTERRUPTIBLE };

struct task {
	const char *name;
	int pid;
	int state;
};

/* The trampoline (assembly); call mode: entered by the site's call. */
extern void my_tramp(void);

void my_direct_func(struct task *t);
int my_wake_up(struct task *t);

static bool quiet;
static unsigned long helper_runs;
static unsigned long helper_bad_arg;
static struct task *expected_task;	/* what the next helper run must see */

/*
 * Called by my_tramp with the traced function's first argument.  It scribbles
 * over the argument registers, as any C call may: the trampoline must have
 * saved them.
 */
notrace void my_direct_func(struct task *t)
{
	helper_runs++;
	if (t != expected_task)
		helper_bad_arg++;
	if (!quiet)
		printf("  my_direct_func: waking up %s (pid %d)\n", t->name, t->pid);
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

static struct ftrace_ops direct;

static struct task tasks[] = {
	{ "kworker/0:1", 17, TASK_INTERRUPTIBLE },
	{ "ksoftirqd/1", 23, TASK_INTERRUPTIBLE },
	{ "rcu_sched", 15, TASK_RUNNING },
};
#define NR_TASKS (sizeof(tasks) / sizeof(tasks[0]))

/* Call my_wake_up() on every task; returns the number of wrong results. */
static notrace unsigned int wake_all(const char *phase)
{
	unsigned int bad = 0;

	if (!quiet)
		printf("%s:\n", phase);
	for (size_t i = 0; i < NR_TASKS; i++) {
		int was_sleeping = tasks[i].state != TASK_RUNNING;
		int ret;

		expected_task = &tasks[i];
		ret = my_wake_up(&tasks[i]);
		if (ret != was_sleeping || tasks[i].state != TASK_RUNNING) {
			fprintf(stderr, "ftrace-direct: my_wake_up(%s) = %d, want %d\n",
				tasks[i].name, ret, was_sleeping);
			bad++;
		}
		if (!quiet)
			printf("  my_wake_up(%s) = %d\n", tasks[i].name, ret);
		tasks[i].state = was_sleeping ? TASK_INTERRUPTIBLE : TASK_RUNNING;
	}
	return bad;
}

/*
 * The patched instruction: x86-64 a 5-byte call (E8 rel32) or jmp (E9), arm64
 * the 4-byte BL slot after MOV X9, X30 (BL = 100101 imm26).
 */
#if defined(__aarch64__)
#define SITE_LEN 4
static notrace bool site_is_branch(const unsigned char *b)
{
	return (b[3] & 0xfc) == 0x94;
}

static notrace unsigned long site_target(unsigned long ip, const unsigned char *b)
{
	uint32_t insn;

	memcpy(&insn, b, sizeof(insn));
	return ip + (unsigned long)(long)(((int32_t)(insn << 6) >> 6) * 4);
}
#else
#define SITE_LEN 5
static notrace bool site_is_branch(const unsigned char *b)
{
	return b[0] == 0xe8 || b[0] == 0xe9;
}

static notrace unsigned long site_target(unsigned long ip, const unsigned char *b)
{
	int32_t rel32;

	memcpy(&rel32, b + 1, sizeof(rel32));
	return ip + SITE_LEN + (unsigned long)(long)rel32;
}
#endif

static notrace void print_site(unsigned long ip, const unsigned char *b, const char *what)
{
	printf("site %#lx:", ip);
	for (int i = 0; i < SITE_LEN; i++)
		printf(" %02x", b[i]);
	printf(" (%s)\n", what);
}

static notrace void usage(FILE *out)
{
	fprintf(out, "usage: ftrace-direct [--quiet]\n");
}

notrace int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	unsigned long before, during, after;
	unsigned int bad = 0;
	struct usft_stats st = { .sz = sizeof(st) };
	unsigned char site[SITE_LEN];
	unsigned long ip;
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

	ip = ftrace_location((unsigned long)my_wake_up);
	if (!ip) {
		fprintf(stderr, "ftrace-direct: my_wake_up has no patch site\n");
		return 1;
	}

	bad += wake_all("not attached");
	before = helper_runs;

	ret = ftrace_set_filter_ip(&direct, (unsigned long)my_wake_up, 0, 0);
	if (ret) {
		fprintf(stderr, "ftrace-direct: ftrace_set_filter_ip: %s\n", strerror(-ret));
		return 1;
	}
	ret = register_ftrace_direct(&direct, (unsigned long)my_tramp);
	if (ret) {
		fprintf(stderr, "ftrace-direct: register_ftrace_direct: %s\n", strerror(-ret));
		return 1;
	}

	/* what the site looks like now: a call (BL on arm64) to my_tramp when in reach */
	if (usft_site_bytes(ip, site, sizeof(site)) == (int)sizeof(site) && !quiet)
		print_site(ip, site, site_is_branch(site) &&
			   site_target(ip, site) == (unsigned long)my_tramp ?
			   "call my_tramp" : "through ftrace_regs_caller");
	if (!usft_stat(&st) && !quiet)
		printf("direct sites: %lu patched straight, %lu through the caller\n",
		       st.nr_direct_in_range, st.nr_direct_out_of_range);

	bad += wake_all("attached");
	during = helper_runs - before;

	ret = unregister_ftrace_direct(&direct, (unsigned long)my_tramp, true);
	if (ret) {
		fprintf(stderr, "ftrace-direct: unregister_ftrace_direct: %s\n", strerror(-ret));
		return 1;
	}

	bad += wake_all("detached");
	after = helper_runs - before - during;

	/* the site is back to its NOP */
	if (usft_site_bytes(ip, site, sizeof(site)) != (int)sizeof(site) || site_is_branch(site)) {
		fprintf(stderr, "ftrace-direct: site still patched after unregister\n");
		bad++;
	} else if (!quiet) {
		print_site(ip, site, "nop");
	}

	ok = !bad && !before && !after && !helper_bad_arg && during == NR_TASKS;
	printf("ftrace-direct: %zu calls attached, helper ran %lu times "
	       "(%lu before attach, %lu after detach, %lu wrong argument), %u errors: %s\n",
	       NR_TASKS, during, before, after, helper_bad_arg, bad, ok ? "OK" : "FAIL");
	return ok ? 0 : 1;
}
