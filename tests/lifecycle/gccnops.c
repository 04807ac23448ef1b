// SPDX-License-Identifier: MIT
/*
 * Sites no INT3 may touch: threads that block every signal call them while
 * usft patches (docs/reliability.md, "Callers that block SIGTRAP"):
 *
 *   gcc's NOPs at start-up   libusft converts this program's own runs in a
 *                            constructor, before its threads exist
 *   gcc's NOPs loaded late   a library loaded while such a thread runs:
 *                            EBUSY, nothing converted, until it is gone;
 *                            one that blocks SIGTRAP alone: converted (no
 *                            trap)
 *   16-byte boundary         sites at 12..15 mod 16 are written without a
 *                            trap
 *   a thread held in a run   a debugger holds a thread inside a run while
 *                            a late library's runs are converted: the
 *                            rendezvous cannot move it, so EBUSY and the
 *                            INT3s go back
 *
 * The loaded objects are tests/lifecycle/gccnops_lib.S (exact bytes and
 * alignment).  Each case runs in a forked child: its death is the failure.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include "test_common.h"

__attribute__((aligned(16))) TRACEE long gn_self0(long x) { TRACEE_BODY(); return x + 100; }
__attribute__((aligned(16))) TRACEE long gn_self1(long x) { TRACEE_BODY(); return x + 200; }

/*
 * a 5-byte NOP, nopl disp8(%rax,%rax,1): gcc's runs become 0f 1f 44 00 00,
 * clang emits 0f 1f 44 00 08 itself
 */
static int is_nop5(const void *fn)
{
	const unsigned char *p = fn;

	return !memcmp(p, "\x0f\x1f\x44\x00", 4) && (p[4] == 0x00 || p[4] == 0x08);
}

static long (*volatile fns[4])(long);
static long adds[4];
static volatile int nfns;
static atomic_int stop, bad;
static atomic_long calls;

static bool only_sigtrap;	/* the callers block SIGTRAP alone, not every signal */

static void *blocked_caller(void *arg)
{
	sigset_t all;

	(void)arg;
	sigfillset(&all);
	if (only_sigtrap) {
		sigemptyset(&all);
		sigaddset(&all, SIGTRAP);
	}
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (long i = 0; !atomic_load(&stop); i++) {
		for (int k = 0; k < nfns; k++)
			if (fns[k](i) != i + adds[k])
				atomic_fetch_add(&bad, 1);
		atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
	}
	return NULL;
}

static pthread_t callers[2];

static void start_callers(void)
{
	atomic_store(&stop, 0);
	atomic_store(&calls, 0);
	for (int i = 0; i < 2; i++)
		pthread_create(&callers[i], NULL, blocked_caller, NULL);
	while (atomic_load(&calls) < 1000)
		usleep(100);
}

static int stop_callers(void)
{
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(callers[i], NULL);
	return atomic_load(&bad) ? 40 : 0;
}

static notrace void count_hit(unsigned long ip, unsigned long pip, struct ftrace_ops *op,
			      struct ftrace_regs *fregs)
{
}

static struct ftrace_ops ops = { .func = count_hit };

static int cycles(int n)
{
	for (int k = 0; k < n; k++) {
		if (register_ftrace_function(&ops))
			return 30;
		if (unregister_ftrace_function(&ops))
			return 31;
	}
	return 0;
}

static void *lib_fn(void *h, const char *name, long add)
{
	void *f = dlsym(h, name);

	if (f) {
		fns[nfns] = f;
		adds[nfns] = add;
		nfns = nfns + 1;	/* published after the pointer (x86-64 TSO) */
	}
	return f;
}

/* ---- this program's own NOPs, converted before main() ------------------- */

static int own_nops(void)
{
	struct usft_stats st = { .sz = sizeof(st) };
	int ret;

	/* no usft call yet (tc_is_nop5() would initialise): the constructor did this */
	if (!is_nop5((const void *)gn_self0) || !is_nop5((const void *)gn_self1))
		return 10;
	fns[0] = gn_self0;
	adds[0] = 100;
	fns[1] = gn_self1;
	adds[1] = 200;
	nfns = 2;
	start_callers();
	/* the first call into usft: init, records, filters, 300 batches */
	if (ftrace_set_filter(&ops, (unsigned char *)"gn_self*", 8, 1))
		ret = 11;
	else
		ret = cycles(100);
	ret = ret ? ret : stop_callers();
	if (!ret && (usft_stat(&st) || st.nr_sites_written == 0))
		ret = 12;
#ifndef __clang__
	/* gcc's runs: converted by the constructor */
	if (!ret && st.nr_early_nops == 0)
		ret = 13;
#endif
	return ret;
}

Test(gccnops, own_runs_converted_before_main_then_blocked_callers_survive, .timeout = 120)
{
	int st = tc_run_child(own_nops);

	cr_assert_eq(st, 0, "the child returned %d", st);
}

/* ---- a library loaded while a blocker runs ----------------------------- */

/* usft up, the callers running, then GN_LIB loaded and gn_run filtered */
static int load_with_callers(void)
{
	void *h;

	if (usft_init())
		return 20;
	start_callers();
	h = dlopen(GN_LIB, RTLD_NOW);
	if (!h || !lib_fn(h, "gn_run", 1)) {
		stop_callers();
		return 21;
	}
	while (atomic_load(&calls) < 2000)
		usleep(100);
	return ftrace_set_filter(&ops, (unsigned char *)"gn_run", 6, 1) ? 22 : 0;
}


static int late_library(void)
{
	int ret;

	/* the callers block every signal before the object is loaded */
	ret = load_with_callers();
	if (ret)
		return ret;
	/* its NOPs cannot be converted now: EBUSY, bytes untouched */
	ret = register_ftrace_function(&ops);
	if (ret != -EBUSY) {
		stop_callers();
		return ret ? 23 : 24;
	}
	if (memcmp((const void *)fns[0], "\x90\x90\x90\x90\x90", 5))
		return 25;
	ret = stop_callers();
	/* the blocker is gone: the next call converts and patches */
	if (!ret && register_ftrace_function(&ops))
		ret = 26;
	if (!ret && !tc_is_call((const void *)fns[0]))
		ret = 27;
	if (!ret && unregister_ftrace_function(&ops))
		ret = 28;
	if (!ret && !tc_is_nop5((const void *)fns[0]))
		ret = 29;
	return ret;
}

Test(gccnops, library_loaded_with_a_blocker_is_ebusy_until_it_goes, .timeout = 120)
{
	int st = tc_run_child(late_library);

	cr_assert_eq(st, 0, "the child returned %d", st);
}

/* ---- a library loaded while a thread blocks SIGTRAP alone ------------- */

/*
 * The conversion takes no trap, so a caller that blocks SIGTRAP (and not
 * the rendezvous signal) neither holds it back nor dies by it.
 */
static int sigtrap_blocker(void)
{
	int ret;

	only_sigtrap = true;
	ret = load_with_callers();
	if (ret)
		return ret;
	ret = register_ftrace_function(&ops);
	if (ret) {
		stop_callers();
		return ret == -EBUSY ? 23 : 24;
	}
	if (!tc_is_call((const void *)fns[0]))
		ret = 25;
	for (long n = atomic_load(&calls) + 2000; !ret && atomic_load(&calls) < n;)
		usleep(100);
	if (!ret && unregister_ftrace_function(&ops))
		ret = 26;
	if (!ret && !tc_is_nop5((const void *)fns[0]))
		ret = 27;
	return ret ? ret : stop_callers();
}

Test(gccnops, library_converted_while_a_thread_blocks_sigtrap, .timeout = 120)
{
	int st = tc_run_child(sigtrap_blocker);

	cr_assert_eq(st, 0, "the child returned %d", st);
}

/* ---- sites across a 16-byte boundary ----------------------------------- */

static int crossing(void)
{
	struct usft_stats st = { .sz = sizeof(st) };
	void *h;
	int ret;

	if (usft_init())
		return 20;
	h = dlopen(GN_LIB, RTLD_NOW);
	if (!h || !lib_fn(h, "gn_x12", 12) || !lib_fn(h, "gn_x13", 13) ||
	    !lib_fn(h, "gn_x14", 14))
		return 21;
	if (ftrace_set_filter(&ops, (unsigned char *)"gn_x1*", 6, 1) || cycles(1))
		return 22;
	start_callers();
	ret = cycles(200);
	ret = ret ? ret : stop_callers();
	for (int k = 0; !ret && k < nfns; k++)
		if (!tc_is_nop5((const void *)fns[k]))
			ret = 32;
	if (!ret && (usft_stat(&st) || !st.nr_notrap_batches))
		ret = 33;
	return ret;
}

Test(gccnops, sites_across_16_bytes_written_without_a_trap, .timeout = 120)
{
	int st = tc_run_child(crossing);

	cr_assert_eq(st, 0, "the child returned %d", st);
}

static int site15(void)
{
	struct usft_stats st = { .sz = sizeof(st) };
	void *h;
	int ret;

	if (usft_init())
		return 20;
	h = dlopen(GN_LIB15, RTLD_NOW);
	if (!h || !lib_fn(h, "gn_x15", 15))
		return 21;
	if (ftrace_set_filter(&ops, (unsigned char *)"gn_x15", 6, 1) || cycles(1))
		return 22;
	start_callers();
	ret = cycles(200);
	ret = ret ? ret : stop_callers();
	if (!ret && !tc_is_nop5((const void *)fns[0]))
		ret = 27;
	if (!ret && (usft_stat(&st) || !st.nr_notrap_batches))
		ret = 28;
	return ret;
}

Test(gccnops, site_at_15_mod_16_written_without_a_trap, .timeout = 120)
{
	int st = tc_run_child(site15);

	cr_assert_eq(st, 0, "the child returned %d", st);
}

/* ---- a thread a debugger holds inside a run ---------------------------- */

/*
 * gn_call_canary(x, f, canary): f(x) as a tail call, entered with %rax =
 * @canary and %r8b = 1.  A thread that resumes at byte 2 of a run already
 * converted to 0f 1f 44 00 00 decodes "44 00 00", add %r8b,(%rax): the
 * canary counts it (and the function still returns x + 1).
 */
long gn_call_canary(long x, long (*f)(long), unsigned char *canary);
__asm__(".text\n"
	".type gn_call_canary, @function\n"
	"gn_call_canary:\n"
	"\tmov %rdx, %rax\n"
	"\tmov $1, %r8d\n"
	"\tjmp *%rsi\n"
	".size gn_call_canary, . - gn_call_canary\n");

static unsigned char canary;
static atomic_int held_tid;

static void *canary_caller(void *arg)
{
	(void)arg;
	atomic_store(&held_tid, (int)syscall(SYS_gettid));
	for (long i = 0; !atomic_load(&stop); i++) {
		if (gn_call_canary(i, fns[0], &canary) != i + 1)
			atomic_fetch_add(&bad, 1);
		atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
	}
	return NULL;
}

/*
 * The debugger (a forked child): stop @tid, single-step it to @at (byte 2
 * of the run: hardware breakpoints are not offered in every VM), report,
 * hold it there until told, then detach: it resumes at @at.
 */
static int hold_in_run(int tid, unsigned long at, int go_fd, int ready_fd)
{
	struct user_regs_struct regs;
	long steps;
	int st;
	char c;

	if (ptrace(PTRACE_SEIZE, tid, 0, 0) || ptrace(PTRACE_INTERRUPT, tid, 0, 0))
		return 1;
	if (waitpid(tid, &st, __WALL) != tid || !WIFSTOPPED(st))
		return 2;
	for (steps = 0; steps < 10000000; steps++) {
		if (ptrace(PTRACE_GETREGS, tid, 0, &regs))
			return 3;
		if (regs.rip == at)
			break;
		if (ptrace(PTRACE_SINGLESTEP, tid, 0, 0))
			return 4;
		if (waitpid(tid, &st, __WALL) != tid || !WIFSTOPPED(st))
			return 5;
	}
	if (regs.rip != at)
		return 6;
	if (write(ready_fd, "h", 1) != 1 || read(go_fd, &c, 1) != 1)
		return 7;
	return ptrace(PTRACE_DETACH, tid, 0, 0) ? 8 : 0;
}

static int held_in_run(void)
{
	struct usft_stats st = { .sz = sizeof(st) };
	int go[2], ready[2], ret, status, debugger_ret;
	bool untouched;
	pthread_t t;
	pid_t pid;
	void *h;
	char c;

	if (usft_init())
		return 20;
	/* not seen by usft yet: its runs are converted by the first call below */
	h = dlopen(GN_LIB, RTLD_NOW);
	if (!h || !lib_fn(h, "gn_run", 1))
		return 21;
	if (memcmp((const void *)fns[0], "\x90\x90\x90\x90\x90", 5))
		return 22;
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);	/* Yama, if any */
	atomic_store(&stop, 0);
	atomic_store(&calls, 0);
	if (pthread_create(&t, NULL, canary_caller, NULL))
		return 23;
	while (atomic_load(&calls) < 1000)
		usleep(100);
	if (pipe(go) || pipe(ready))
		return 24;
	pid = fork();
	if (pid == 0)
		_exit(hold_in_run(atomic_load(&held_tid), (unsigned long)fns[0] + 2, go[0],
				  ready[1]));
	close(ready[1]);
	if (pid < 0 || read(ready[0], &c, 1) != 1) {
		waitpid(pid, &status, 0);
		return 25;	/* the debugger failed: its exit status says where */
	}
	/* the thread is stopped at byte 2 of gn_run's run */
	ret = ftrace_set_filter(&ops, (unsigned char *)"gn_run", 6, 1);
	if (!ret)
		ret = register_ftrace_function(&ops);
	untouched = !memcmp((const void *)fns[0], "\x90\x90\x90\x90\x90", 5);
	if (write(go[1], "g", 1) != 1)
		return 26;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 27;
	debugger_ret = WEXITSTATUS(status);
	/* the thread runs on from byte 2 */
	for (long n = atomic_load(&calls) + 1000; atomic_load(&calls) < n;)
		usleep(100);
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	if (debugger_ret)
		return 30 + debugger_ret;
	if (ret != -EBUSY)
		return ret ? 41 : 42;	/* 42: converted under the held thread */
	if (!untouched)
		return 43;
	if (canary || atomic_load(&bad))
		return 44;	/* it ran byte 2 of a 5-byte NOP */
	if (usft_stat(&st) || st.nr_nop_conversions_refused == 0)
		return 45;
	/* nobody is held now: the next call converts and patches */
	if (register_ftrace_function(&ops))
		return 46;
	if (!tc_is_call((const void *)fns[0]))
		return 47;
	if (unregister_ftrace_function(&ops) || !tc_is_nop5((const void *)fns[0]))
		return 48;
	return 0;
}

Test(gccnops, thread_held_inside_a_run_is_ebusy_and_keeps_its_nops, .timeout = 120)
{
	int st = tc_run_child(held_in_run);

	cr_assert_eq(st, 0, "the child returned %d", st);
}
