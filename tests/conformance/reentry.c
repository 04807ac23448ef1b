// SPDX-License-Identifier: MIT
/*
 * Re-entry: an update API call made from inside a callback, or from a
 * signal handler that interrupted an update API call on the same thread,
 * is refused with -EDEADLK (the kernel forbids both: a mutex taken in
 * atomic context, lockdep).  Before, the first hung in the grace period and
 * the second ran into the half-done update.  Lookups stay allowed in
 * callbacks.  docs/design.md.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/time.h>

#include <usft/trampoline.h>

#include "test_common.h"

TRACEE long re_func(long x)
{
	TRACEE_BODY();
	return x + 1;
}

TRACEE long re_other(long x)
{
	TRACEE_BODY();
	return x + 2;
}

notrace static void nop_cb(unsigned long ip, unsigned long pip, struct ftrace_ops *op,
			   struct ftrace_regs *fregs)
{
}

notrace static unsigned long nop_prog(const unsigned long *ctx, void *cookie)
{
	return 0;
}

static struct ftrace_ops other_ops = { .func = nop_cb };

/* what the calls made from inside a callback returned */
enum { R_REGISTER, R_UNREGISTER, R_FILTER, R_DIRECT, R_STAT, R_OPTION, R_ATTACH, R_LOCATION,
       R_NR };
static int res[R_NR], err[R_NR];
static atomic_int ran;

#define RECORD(i, call)                        \
	do {                                   \
		errno = 0;                     \
		res[i] = (call);               \
		err[i] = errno;                \
	} while (0)

notrace static void reentering_cb(unsigned long ip, unsigned long pip, struct ftrace_ops *op,
				  struct ftrace_regs *fregs)
{
	struct usft_stats st = { .sz = sizeof(st) };
	struct usft_tramp_opts o = { .sz = sizeof(o), .nr_args = 1 };

	if (atomic_exchange(&ran, 1))
		return;
	RECORD(R_REGISTER, register_ftrace_function(&other_ops));
	RECORD(R_UNREGISTER, unregister_ftrace_function(op));
	RECORD(R_FILTER, ftrace_set_filter_ip(&other_ops, ip, 0, 0));
	RECORD(R_DIRECT, register_ftrace_direct(&other_ops, (unsigned long)re_other));
	RECORD(R_STAT, usft_stat(&st));
	RECORD(R_OPTION, usft_set_option("jmp", "1"));
	RECORD(R_ATTACH, usft_tramp_attach((void *)re_other, USFT_TRAMP_FENTRY, nop_prog, NULL,
					   &o) ? 0 : -1);
	RECORD(R_LOCATION, ftrace_location((unsigned long)re_other) ? 0 : -1);
}

Test(reentry, update_calls_from_a_callback_are_refused_with_edeadlk, .timeout = 30)
{
	static struct ftrace_ops ops = { .func = reentering_cb };
	static const char *const what[] = { "register_ftrace_function", "unregister_ftrace_function",
					    "ftrace_set_filter_ip", "register_ftrace_direct",
					    "usft_stat", "usft_set_option", "usft_tramp_attach" };
	unsigned char b[TC_SITE_SIZE];

	cr_assert_eq(usft_init(), 0);
	cr_assert_eq(ftrace_set_filter_ip(&ops, ftrace_location((unsigned long)re_func), 0, 0), 0);
	cr_assert_eq(register_ftrace_function(&ops), 0);
	re_func(1);
	cr_assert(atomic_load(&ran));
	for (int i = 0; i < R_LOCATION; i++) {
		cr_expect_eq(res[i], -1 * (i != R_ATTACH ? EDEADLK : 1), "%s from a callback: %d",
			     what[i], res[i]);
		cr_expect_eq(err[i], EDEADLK, "%s from a callback: errno %s", what[i],
			     strerror(err[i]));
	}
	cr_expect_eq(res[R_LOCATION], 0, "ftrace_location() still works in a callback");
	/* nothing changed: the ops is still registered, the other was never */
	cr_expect(ops.flags & FTRACE_OPS_FL_ENABLED);
	cr_expect_not(other_ops.flags & FTRACE_OPS_FL_ENABLED);
	cr_assert_eq(unregister_ftrace_function(&ops), 0);
	cr_assert_eq(tc_read_site(re_func, b), TC_SITE_SIZE);
	expect_nop5(re_func);
	/* and the same calls outside callbacks work */
	cr_assert_eq(ftrace_set_filter_ip(&other_ops, ftrace_location((unsigned long)re_other), 0,
					  0), 0);
	cr_assert_eq(register_ftrace_function(&other_ops), 0);
	cr_assert_eq(unregister_ftrace_function(&other_ops), 0);
}

/* ---- from a signal handler that interrupted an update call -------------- */

static int sig_ret, sig_errno;
static atomic_int in_print;

static void handler_registers(int sig)
{
	(void)sig;
	errno = 0;
	sig_ret = register_ftrace_function(&other_ops);
	sig_errno = errno;
	if (sig_ret == 0)
		unregister_ftrace_function(&other_ops);
}

/* the log sink runs inside the API call that logs: the signal arrives there */
notrace static void raising_print(enum usft_log_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	if (!atomic_exchange(&in_print, 1))
		raise(SIGUSR1);
}

Test(reentry, update_call_from_a_handler_that_interrupted_one_is_refused, .timeout = 30)
{
	struct sigaction sa = { .sa_handler = handler_registers };

	cr_assert_eq(usft_init(), 0);
	cr_assert_eq(ftrace_set_filter_ip(&other_ops, ftrace_location((unsigned long)re_other), 0,
					  0), 0);
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	usft_set_print(raising_print);
	/* a refused option logs from inside the call */
	cr_assert_eq(usft_set_option("no_such_option", "1"), -ENOENT);
	usft_set_print(NULL);
	cr_assert(atomic_load(&in_print));
	cr_expect_eq(sig_ret, -EDEADLK, "register_ftrace_function() from the handler: %d", sig_ret);
	cr_expect_eq(sig_errno, EDEADLK);
	cr_expect_not(other_ops.flags & FTRACE_OPS_FL_ENABLED);
	/* a handler that interrupted no update call may register */
	raise(SIGUSR1);
	cr_expect_eq(sig_ret, 0, "register_ftrace_function() from a handler outside any call: %d",
		     sig_ret);
}

/*
 * A timer storm whose handler registers and unregisters while the thread it
 * interrupts does the same: every handler call is done or refused with
 * -EDEADLK, the runtime stays alive and every site ends disabled.
 *
 * The timer is one-shot, re-armed by the loop with a varying delay of up to
 * a few hundred microseconds, so each signal lands at a different point of
 * the update calls.  A periodic timer whose period is shorter than the
 * handler's own register+unregister (which it is under ASan on a slow
 * machine) re-fires as each handler returns and starves the loop: the test
 * then timed out without any fault in usft.
 */
static atomic_int storm_ok, storm_refused, storm_bad;

static void storm_handler(int sig)
{
	int saved = errno, r;

	(void)sig;
	r = register_ftrace_function(&other_ops);
	if (r == 0) {
		re_other(1);
		if (unregister_ftrace_function(&other_ops) == 0)
			atomic_fetch_add(&storm_ok, 1);
		else
			atomic_fetch_add(&storm_bad, 1);
	} else if (errno == EDEADLK) {
		atomic_fetch_add(&storm_refused, 1);
	} else {
		atomic_fetch_add(&storm_bad, 1);
	}
	errno = saved;
}

Test(reentry, handler_storm_during_updates_keeps_the_runtime_alive, .timeout = 60)
{
	static struct tc_counter c;
	struct sigaction sa = { .sa_handler = storm_handler };
	struct itimerval it = { { 0, 0 }, { 0, 0 } };
	struct usft_stats st = { .sz = sizeof(st) };
	unsigned int seed = 1;

	cr_assert_eq(usft_init(), 0);
	cr_assert_eq(ftrace_set_filter_ip(&other_ops, ftrace_location((unsigned long)re_other), 0,
					  0), 0);
	tc_counter_init(&c, 0);
	cr_assert_eq(ftrace_set_filter_ip(&c.ops, ftrace_location((unsigned long)re_func), 0, 0),
		     0);
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	cr_assert_eq(sigaction(SIGALRM, &sa, NULL), 0);
	for (int i = 0; i < 300 || !atomic_load(&storm_refused); i++) {
		/* 1..400 us from now: somewhere inside the calls below */
		seed = seed * 1103515245u + 12345u;
		it.it_value.tv_usec = 1 + (seed >> 16) % 400;
		cr_assert_eq(setitimer(ITIMER_REAL, &it, NULL), 0);
		cr_assert_eq(register_ftrace_function(&c.ops), 0);
		re_func(1);
		cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
		if (i > 20000)
			break;
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	cr_assert_eq(usft_stat(&st), 0);
	cr_expect_eq(st.disabled, 0, "the kill switch fired");
	cr_expect_eq(atomic_load(&storm_bad), 0, "a handler call failed otherwise");
	cr_log_info("handler calls: %d done, %d refused", atomic_load(&storm_ok),
		    atomic_load(&storm_refused));
	expect_nop5(re_func);
	expect_nop5(re_other);
}
