// SPDX-License-Identifier: MIT
/*
 * A W^X policy: the system refuses to make text writable while it stays
 * executable (SELinux execmem/execmod, PaX MPROTECT; here a seccomp filter
 * that refuses mprotect() with PROT_WRITE|PROT_EXEC, installed in a forked
 * child).  usft must refuse cleanly (docs/reliability.md, "W^X policies"):
 * -EPERM, not the kill switch's -ENODEV; the counters say nothing was
 * enabled; the program's text is byte for byte what it was; the program
 * runs on; a later call is refused the same way, not with -ENODEV.
 *
 *   before init   the policy is there before usft ever ran (the compiler's
 *                 NOPs stay as compiled)
 *   after init    the policy comes after usft converted the NOPs
 *   unregister    an ops registered before the policy: unregistering it
 *                 cannot put the sites back, so it is refused and the ops
 *                 keeps running
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "test_common.h"

TRACEE long wx_f(long x) { TRACEE_BODY(); return x * 3 + 1; }

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

static notrace int run_child(int (*fn)(void))
{
	pid_t pid = fork();
	int st;

	cr_assert_geq(pid, 0);
	if (!pid) {
		alarm(60);
		_exit(fn());
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
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

	if (usft_init())
		FAIL(2, "usft_init failed\n");
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

Test(wx_policy, refused_before_init) { cr_expect_eq(run_child(child_before_init), 0); }
Test(wx_policy, refused_after_init) { cr_expect_eq(run_child(child_after_init), 0); }
Test(wx_policy, unregister_refused) { cr_expect_eq(run_child(child_unregister), 0); }
