// SPDX-License-Identifier: MIT
/*
 * A W^X policy: the system refuses to make text writable while it stays
 * executable (SELinux execmem/execmod, PaX MPROTECT; here a seccomp filter
 * that refuses mprotect() with PROT_WRITE|PROT_EXEC, installed in a forked
 * child).  usft must refuse cleanly (docs/reliability.md, "W^X policies"):
 * -EPERM, not the kill switch's -ENODEV; the counters say nothing was
 * enabled; the program's text is byte for byte what it was; the program
 * runs on; a later call is refused the same way, not with -ENODEV.
 * With text_write=mprotect (only that route):
 *
 *   before init   the policy is there before usft ever ran (the compiler's
 *                 NOPs stay as compiled)
 *   after init    the policy comes after usft converted the NOPs
 *   unregister    an ops registered before the policy: unregistering it
 *                 cannot put the sites back, so it is refused and the ops
 *                 keeps running
 *
 * With the default text_write=auto, text is written through /proc/self/mem
 * instead, and no page is ever writable and executable: the calls succeed,
 * events are counted, unregister puts the NOP back, and a thread that
 * blocks SIGTRAP gets the call refused with -EBUSY (the INT3 protocol is
 * the only one that route can write), never killed.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "test_common.h"

TRACEE long wx_f(long x) { TRACEE_BODY(); return x * 3 + 1; }
TRACEE long wx_g(long x) { TRACEE_BODY(); return x * 5 + 2; }

#define FAIL(code, ...) do { fprintf(stderr, "wx_policy: " __VA_ARGS__); return code; } while (0)

/* mprotect() with both PROT_WRITE and PROT_EXEC fails with EACCES from now on */
static notrace int forbid_wx(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mprotect, 0, 4),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
		BPF_STMT(BPF_ALU | BPF_AND | BPF_K, PROT_WRITE | PROT_EXEC),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROT_WRITE | PROT_EXEC, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return -1;
	return 0;
}

/* refused cleanly: EPERM counted, nothing enabled, runtime alive */
static notrace int refused_cleanly(struct tc_counter *c, const unsigned char *text, int step)
{
	struct usft_stats st = { .sz = sizeof(st) };

	if (usft_stat(&st))
		FAIL(step, "usft_stat failed\n");
	if (st.disabled)
		FAIL(step + 1, "the kill switch fired (ftrace_bug)\n");
	if (st.nr_enabled || st.nr_ops)
		FAIL(step + 2, "counters: %lu sites enabled, %lu ops after a refused call\n",
		     st.nr_enabled, st.nr_ops);
	if (!st.nr_wx_refused)
		FAIL(step + 3, "nr_wx_refused is 0\n");
	if (memcmp((const void *)wx_f, text, TC_SITE_SIZE))
		FAIL(step + 4, "the site's bytes changed\n");
	if (wx_f(4) != 13 || tc_count(c))
		FAIL(step + 5, "wx_f ran wrong or was traced\n");
	return 0;
}

static notrace int child_before_init(void)
{
	static struct tc_counter c;
	unsigned char text[TC_SITE_SIZE];
	int ret;

	memcpy(text, (const void *)wx_f, TC_SITE_SIZE);	/* as compiled: usft not started */
	setenv("USFT_OPTIONS", "text_write=mprotect", 1);	/* read when usft starts */
	if (forbid_wx())
		FAIL(2, "seccomp: %s\n", strerror(errno));
	tc_counter_init(&c, 0);
	if (tc_set_filter(&c.ops, "wx_f", 1))
		FAIL(3, "ftrace_set_filter refused\n");
	ret = register_ftrace_function(&c.ops);
	if (ret != -EPERM)
		FAIL(4, "register_ftrace_function() = %d, not -EPERM\n", ret);
	ret = refused_cleanly(&c, text, 10);
	if (ret)
		return ret;
	/* still alive, and still refusing the same way */
	ret = register_ftrace_function(&c.ops);
	if (ret != -EPERM)
		FAIL(20, "second register_ftrace_function() = %d, not -EPERM\n", ret);
	return 0;
}

static notrace int child_after_init(void)
{
	static struct tc_counter c;
	unsigned char text[TC_SITE_SIZE];
	int ret;

	if (usft_init() || usft_set_option("text_write", "mprotect"))
		FAIL(2, "usft_init or text_write=mprotect failed\n");
	tc_counter_init(&c, 0);
	if (tc_set_filter(&c.ops, "wx_f", 1))
		FAIL(3, "ftrace_set_filter refused\n");
	memcpy(text, (const void *)wx_f, TC_SITE_SIZE);
	if (memcmp(text, tc_nop5, TC_SITE_SIZE))
		FAIL(4, "the site is not the disabled NOP after init\n");
	if (forbid_wx())
		FAIL(5, "seccomp: %s\n", strerror(errno));
	ret = register_ftrace_function(&c.ops);
	if (ret != -EPERM)
		FAIL(6, "register_ftrace_function() = %d, not -EPERM\n", ret);
	return refused_cleanly(&c, text, 10);
}

static notrace int child_unregister(void)
{
	static struct tc_counter c;
	struct usft_stats st = { .sz = sizeof(st) };
	unsigned char text[TC_SITE_SIZE];
	int ret;

	if (usft_set_option("text_write", "mprotect"))
		FAIL(1, "text_write=mprotect refused\n");
	tc_counter_init(&c, 0);
	if (tc_set_filter(&c.ops, "wx_f", 1))
		FAIL(2, "ftrace_set_filter refused\n");
	if (register_ftrace_function(&c.ops))
		FAIL(3, "register_ftrace_function failed without a policy\n");
	if (wx_f(1) != 4 || tc_count(&c) != 1)
		FAIL(4, "not traced\n");
	memcpy(text, (const void *)wx_f, TC_SITE_SIZE);
	if (forbid_wx())
		FAIL(5, "seccomp: %s\n", strerror(errno));
	ret = unregister_ftrace_function(&c.ops);
	if (ret != -EPERM)
		FAIL(6, "unregister_ftrace_function() = %d, not -EPERM\n", ret);
	ret = ftrace_set_filter(&c.ops, (unsigned char *)"wx_f", strlen("wx_f"), 1);
	if (ret != -EPERM)
		FAIL(7, "ftrace_set_filter() on the enabled ops = %d, not -EPERM\n", ret);
	if (memcmp((const void *)wx_f, text, TC_SITE_SIZE))
		FAIL(8, "the site's bytes changed\n");
	if (wx_f(2) != 7 || tc_count(&c) != 2)
		FAIL(9, "the ops that could not be unregistered stopped running\n");
	if (usft_stat(&st) || st.disabled || st.nr_enabled != 1 || st.nr_ops != 1)
		FAIL(10, "counters: disabled %d, %lu enabled, %lu ops (want 0, 1, 1)\n",
		     st.disabled, st.nr_enabled, st.nr_ops);
	return 0;
}

/* a mapping that is writable and executable at once, or 0 */
static notrace unsigned long wx_mapping(void)
{
	char line[512], perms[8];
	unsigned long lo = 0;
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return 1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%*x %7s", &lo, perms) == 2 && perms[1] == 'w' &&
		    perms[2] == 'x')
			break;
		else
			lo = 0;
	fclose(f);
	return lo;
}

/*
 * Under the policy, through /proc/self/mem: registered, @fn traced (@n
 * calls counted), text written only through /proc/self/mem, never W+X;
 * unregistered, the disabled NOP back and nothing traced.
 */
static notrace int patched_under_policy(struct tc_counter *c, long (*fn)(long),
					const char *name, unsigned long others, int step)
{
	struct usft_stats st = { .sz = sizeof(st) };
	unsigned long wx;
	int ret;

	tc_counter_init(c, 0);
	if (tc_set_filter(&c->ops, name, 1))
		FAIL(step, "ftrace_set_filter refused\n");
	ret = register_ftrace_function(&c->ops);
	if (ret)
		FAIL(step + 1, "register_ftrace_function() = %d under the policy\n", ret);
	for (long i = 0; i < 100; i++)
		fn(i);
	if (tc_count(c) != 100)
		FAIL(step + 2, "%ld events counted, not 100\n", tc_count(c));
	wx = wx_mapping();
	if (wx)
		FAIL(step + 3, "a mapping at %#lx is writable and executable\n", wx);
	if (usft_stat(&st) || st.disabled || st.nr_enabled != others + 1 ||
	    !st.nr_procmem_writes)
		FAIL(step + 4, "counters: disabled %d, %lu enabled, %lu procmem writes\n",
		     st.disabled, st.nr_enabled, st.nr_procmem_writes);
	ret = unregister_ftrace_function(&c->ops);
	if (ret)
		FAIL(step + 5, "unregister_ftrace_function() = %d under the policy\n", ret);
	if (memcmp((const void *)fn, tc_nop5, TC_SITE_SIZE))
		FAIL(step + 6, "the site is not the disabled NOP after unregister\n");
	fn(1);
	if (tc_count(c) != 100)
		FAIL(step + 7, "traced after unregister\n");
	if (usft_stat(&st) || st.nr_enabled != others || st.nr_ops != others || wx_mapping())
		FAIL(step + 8, "after unregister: %lu enabled, %lu ops, or a W+X mapping\n",
		     st.nr_enabled, st.nr_ops);
	return 0;
}

static notrace int child_procmem_before_init(void)
{
	static struct tc_counter c;

	if (forbid_wx())
		FAIL(2, "seccomp: %s\n", strerror(errno));
	return patched_under_policy(&c, wx_f, "wx_f", 0, 10);
}

static notrace int child_procmem_after_init(void)
{
	static struct tc_counter c, d;
	int ret;

	if (usft_init())
		FAIL(2, "usft_init failed\n");
	tc_counter_init(&d, 0);
	if (tc_set_filter(&d.ops, "wx_g", 1) || register_ftrace_function(&d.ops))
		FAIL(3, "register without a policy failed\n");
	if (forbid_wx())
		FAIL(4, "seccomp: %s\n", strerror(errno));
	ret = patched_under_policy(&c, wx_f, "wx_f", 1, 10);
	if (ret)
		return ret;
	/* registered before the policy: now it can be unregistered */
	if (wx_g(1) != 7 || tc_count(&d) != 1)
		FAIL(20, "the ops registered before the policy stopped running\n");
	ret = unregister_ftrace_function(&d.ops);
	if (ret || memcmp((const void *)wx_g, tc_nop5, TC_SITE_SIZE))
		FAIL(21, "unregister of the earlier ops = %d, or its site not the NOP\n", ret);
	return 0;
}

/*
 * The /proc/self/mem descriptor is bound to the process that opened it: a
 * child that patches after fork() must write its own text, not the parent's.
 */
static notrace int child_procmem_fork(void)
{
	static struct tc_counter c;
	pid_t pid;
	int st, ret;

	if (forbid_wx())
		FAIL(2, "seccomp: %s\n", strerror(errno));
	ret = patched_under_policy(&c, wx_f, "wx_f", 0, 10);	/* opens the descriptor */
	if (ret)
		return ret;
	pid = fork();
	if (pid < 0)
		FAIL(3, "fork: %s\n", strerror(errno));
	if (!pid) {
		static struct tc_counter d;

		tc_counter_init(&d, 0);
		if (tc_set_filter(&d.ops, "wx_g", 1) || register_ftrace_function(&d.ops))
			_exit(1);
		wx_g(1);
		_exit(tc_count(&d) == 1 ? 0 : 2);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		FAIL(4, "the child could not patch under the policy (status %#x)\n", st);
	if (memcmp((const void *)wx_g, tc_nop5, TC_SITE_SIZE))
		FAIL(5, "the child's patch landed in the parent's text\n");
	return 0;
}

static int blocker_go;

static notrace void *sigtrap_blocker(void *arg)
{
	sigset_t all;

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	__atomic_store_n(&blocker_go, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&blocker_go, __ATOMIC_ACQUIRE) == 1)
		wx_f(1);	/* an INT3 here would kill the process */
	return NULL;
}

/*
 * a thread blocks SIGTRAP and runs the site: it is written without a trap
 * (x86-64 poke_flush_without_traps()), the thread lives, the NOP comes back
 */
static notrace int child_procmem_sigtrap_blocker(void)
{
	static struct tc_counter c;
	struct usft_stats st = { .sz = sizeof(st) };
	pthread_t t;

	if (usft_init())
		FAIL(2, "usft_init failed\n");
	if (forbid_wx())
		FAIL(3, "seccomp: %s\n", strerror(errno));
	if (pthread_create(&t, NULL, sigtrap_blocker, NULL))
		FAIL(4, "pthread_create failed\n");
	while (!__atomic_load_n(&blocker_go, __ATOMIC_ACQUIRE))
		;
	tc_counter_init(&c, 0);
	if (tc_set_filter(&c.ops, "wx_f", 1))
		FAIL(5, "ftrace_set_filter refused\n");
	for (int k = 0; k < 50; k++) {
		int ret = register_ftrace_function(&c.ops);

		if (ret)
			FAIL(6, "register_ftrace_function() = %d with a SIGTRAP blocker\n", ret);
		ret = unregister_ftrace_function(&c.ops);
		if (ret)
			FAIL(7, "unregister_ftrace_function() = %d with a SIGTRAP blocker\n", ret);
	}
	__atomic_store_n(&blocker_go, 2, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	if (usft_stat(&st) || st.disabled || !st.nr_notrap_batches || !st.nr_procmem_writes)
		FAIL(8, "counters: disabled %d, %lu trap-free batches, %lu procmem writes\n",
		     st.disabled, st.nr_notrap_batches, st.nr_procmem_writes);
	if (!tc_is_nop5((const void *)wx_f))
		FAIL(9, "the NOP is not back\n");
	return 0;
}

/* text_write=procmem without any policy: the same route, chosen */
static notrace int child_procmem_forced(void)
{
	static struct tc_counter c;

	if (usft_set_option("text_write", "procmem"))
		FAIL(2, "text_write=procmem refused\n");
	return patched_under_policy(&c, wx_f, "wx_f", 0, 10);
}

Test(wx_policy, refused_before_init) { cr_expect_eq(tc_run_child(child_before_init), 0); }
Test(wx_policy, refused_after_init) { cr_expect_eq(tc_run_child(child_after_init), 0); }
Test(wx_policy, unregister_refused) { cr_expect_eq(tc_run_child(child_unregister), 0); }
Test(wx_policy, procmem_before_init) { cr_expect_eq(tc_run_child(child_procmem_before_init), 0); }
Test(wx_policy, procmem_after_init) { cr_expect_eq(tc_run_child(child_procmem_after_init), 0); }
Test(wx_policy, procmem_fork) { cr_expect_eq(tc_run_child(child_procmem_fork), 0); }
Test(wx_policy, procmem_sigtrap_blocker) { cr_expect_eq(tc_run_child(child_procmem_sigtrap_blocker), 0); }
Test(wx_policy, procmem_forced) { cr_expect_eq(tc_run_child(child_procmem_forced), 0); }
