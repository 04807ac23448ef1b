// SPDX-License-Identifier: MIT
/*
 * Signal handlers are the userspace "interrupt contexts" of the kernel's
 * recursion bits (trace_recursion.h): a traced call made from a signal
 * handler that interrupted a callback is a new context, not recursion.
 * Also: handlers the program installs keep their observable behaviour
 * (sigaction reports them back, SA_RESETHAND, a program SIGTRAP handler
 * still gets its own traps while usft patches with INT3).
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "test_common.h"

TRACEE long cf_sig_f(long x)
{
	TRACEE_BODY();
	return x + 1;
}

TRACEE long cf_sig_g(long x)
{
	TRACEE_BODY();
	return x * 2;
}

static volatile sig_atomic_t raise_next;
static volatile long hits;
static const int chain_sigs[] = { SIGUSR1, SIGUSR2 };

static notrace void chain_handler(int sig)
{
	cf_sig_f(sig);
}

/* each callback run raises the next signal, whose handler calls cf_sig_f */
static notrace void raising_func(unsigned long ip, unsigned long pip, struct ftrace_ops *op,
				 struct ftrace_regs *fregs)
{
	int n;

	hits++;
	n = raise_next;
	if (n > 0) {
		raise_next = n - 1;
		raise(chain_sigs[2 - n]);
	}
}

static notrace void install(int sig, void (*h)(int), int flags)
{
	struct sigaction a;

	memset(&a, 0, sizeof(a));
	a.sa_handler = h;
	a.sa_flags = flags;
	sigemptyset(&a.sa_mask);
	cr_assert_eq(sigaction(sig, &a, NULL), 0);
}

static void check_nested(unsigned long flags)
{
	static struct ftrace_ops ops;

	cr_assert_eq(usft_init(), 0);
	install(SIGUSR1, chain_handler, 0);
	install(SIGUSR2, chain_handler, 0);
	memset(&ops, 0, sizeof(ops));
	ops.func = raising_func;
	ops.flags = flags;
	cr_assert_eq(tc_set_filter(&ops, "cf_sig_f", 1), 0);
	cr_assert_eq(register_ftrace_function(&ops), 0);
	hits = 0;
	raise_next = 2;
	cr_assert_eq(cf_sig_f(1), 2);
	/*
	 * normal flow, a handler, a handler inside it: three contexts, three
	 * callbacks.  With the transition bit alone the third would be
	 * refused as recursion.
	 */
	cr_assert_eq(hits, 3, "callback ran %ld times across 3 signal contexts", hits);
	cr_assert_eq(unregister_ftrace_function(&ops), 0);
}

Test(recursion, signal_handlers_are_new_contexts_with_recursion_flag)
{
	check_nested(FTRACE_OPS_FL_RECURSION);
}

Test(recursion, signal_handlers_are_new_contexts_on_the_list_path)
{
	static struct tc_counter other;

	/* a second ops on the site forces the list function */
	tc_counter_init(&other, 0);
	cr_assert_eq(tc_set_filter(&other.ops, "cf_sig_f", 1), 0);
	cr_assert_eq(usft_init(), 0);
	cr_assert_eq(register_ftrace_function(&other.ops), 0);
	check_nested(0);
	cr_assert_eq(tc_count(&other), 3);
	cr_assert_eq(unregister_ftrace_function(&other.ops), 0);
}

static notrace void plain_handler(int sig)
{
}

Test(sigaction, reports_the_programs_own_handler)
{
	struct sigaction o;

	cr_assert_eq(usft_init(), 0);
	install(SIGUSR1, plain_handler, SA_RESTART);
	cr_assert_eq(sigaction(SIGUSR1, NULL, &o), 0);
	cr_assert(o.sa_handler == plain_handler);
	cr_assert(!(o.sa_flags & SA_SIGINFO), "the wrapper's SA_SIGINFO leaked out");
	cr_assert(o.sa_flags & SA_RESTART);
	cr_assert(signal(SIGUSR1, SIG_IGN) == plain_handler);
	cr_assert(signal(SIGUSR1, SIG_DFL) == SIG_IGN);
}

static volatile int reset_hits;
static notrace void reset_handler(int sig)
{
	reset_hits++;
}

Test(sigaction, resethand_is_honoured)
{
	struct sigaction o;

	cr_assert_eq(usft_init(), 0);
	install(SIGUSR2, reset_handler, SA_RESETHAND);
	raise(SIGUSR2);
	cr_assert_eq(reset_hits, 1);
	cr_assert_eq(sigaction(SIGUSR2, NULL, &o), 0);
	cr_assert(o.sa_handler == SIG_DFL, "SA_RESETHAND did not reset the reported handler");
}

static volatile int trap_hits;
static notrace void trap_handler(int sig)
{
	trap_hits++;
}

Test(sigaction, programs_sigtrap_handler_keeps_its_traps_while_usft_patches)
{
	static struct tc_counter c;

	cr_assert_eq(usft_init(), 0);
	install(SIGTRAP, trap_handler, 0);
#if defined(__x86_64__)
	__asm__ volatile("int3");	/* a trap of the program's own */
#else
	raise(SIGTRAP);		/* arm64 BRK would trap again on return */
#endif
	cr_assert_eq(trap_hits, 1);
	tc_counter_init(&c, 0);
	cr_assert_eq(tc_set_filter(&c.ops, "cf_sig_g", 1), 0);
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	expect_call(cf_sig_g);
	cr_assert_eq(cf_sig_g(4), 8);
	cr_assert_eq(tc_count(&c), 1);
	raise(SIGTRAP);
	cr_assert_eq(trap_hits, 2);
	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	expect_nop5(cf_sig_g);
}

/* usft_signal_hook(): the hook first, then the program's handler as without usft */
static volatile int hook_hits, prog_hits, order_ok, hook_ran;
static notrace void hook_fn(int sig)
{
	hook_hits++;
	hook_ran = 1;
	errno = EBADF;	/* the program's errno must survive the hook */
}

static notrace void prog_handler(int sig)
{
	order_ok = hook_ran;
	hook_ran = 0;
	prog_hits++;
}

Test(sighook, runs_before_the_programs_handler_installed_later_and_keeps_its_flags)
{
	struct sigaction o, k;

	cr_assert_eq(usft_init(), 0);
	cr_assert_eq(usft_signal_hook(SIGUSR1, hook_fn, NULL), 0);
	cr_assert_eq(usft_signal_hook(SIGUSR1, hook_fn, NULL), -EBUSY);
	/* SIG_DFL: the hook alone takes it (the process lives on) */
	raise(SIGUSR1);
	cr_assert_eq(hook_hits, 1);
	memset(&o, 0, sizeof(o));
	o.sa_handler = prog_handler;
	o.sa_flags = SA_NODEFER;
	sigemptyset(&o.sa_mask);
	sigaddset(&o.sa_mask, SIGUSR2);
	cr_assert_eq(sigaction(SIGUSR1, &o, NULL), 0);
	/* reported back as the program's, and the kernel has its mask and flags */
	cr_assert_eq(sigaction(SIGUSR1, NULL, &k), 0);
	cr_assert(k.sa_handler == prog_handler && (k.sa_flags & SA_NODEFER) &&
		  !(k.sa_flags & SA_RESTART));
	cr_assert(sigismember(&k.sa_mask, SIGUSR2));
	{
		/* what the kernel holds (x86-64 and arm64 share this layout) */
		struct {
			void *handler;
			unsigned long flags;
			void *restorer;
			unsigned long mask;
		} ka;

		cr_assert_eq(syscall(SYS_rt_sigaction, SIGUSR1, NULL, &ka, 8), 0);
		cr_assert((ka.flags & SA_NODEFER) && !(ka.flags & SA_RESTART) &&
			  (ka.mask & (1UL << (SIGUSR2 - 1))), "the program's flags are not the kernel's");
	}
	errno = 0;
	raise(SIGUSR1);
	cr_assert_eq(errno, 0);
	cr_assert_eq(hook_hits, 2);
	cr_assert_eq(prog_hits, 1);
	cr_assert(order_ok, "the program's handler ran before the hook");
	/* unhooked: the program's handler is the kernel's again */
	cr_assert_eq(usft_signal_unhook(SIGUSR1), 0);
	cr_assert_eq(usft_signal_unhook(SIGUSR1), -EINVAL);
	raise(SIGUSR1);
	cr_assert_eq(hook_hits, 2);
	cr_assert_eq(prog_hits, 2);
	cr_assert_eq(sigaction(SIGUSR1, NULL, &k), 0);
	cr_assert(k.sa_handler == prog_handler);
}

Test(sighook, refuses_faults_usfts_own_and_uncatchable_signals)
{
	const int no[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGSYS, SIGTRAP, SIGKILL, SIGSTOP, 0, 999 };
	const char *why;

	cr_assert_eq(usft_init(), 0);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		cr_assert_eq(usft_signal_hook(no[i], hook_fn, &why), -EINVAL, "signal %d", no[i]);
		cr_assert(why && *why);
	}
}
