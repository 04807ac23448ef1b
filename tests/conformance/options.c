// SPDX-License-Identifier: MIT
/*
 * Runtime options are input: a value usft cannot work with is refused with
 * a message naming the cause and the fix, through usft_set_option() and
 * through USFT_OPTIONS alike.  The rendezvous signal in particular may not
 * be one that usft, libc or the kernel already gives a meaning
 * (docs/options.md).
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_common.h"

static char logged[4096];

notrace static void capture(enum usft_log_level level, const char *fmt, va_list ap)
{
	size_t n = strlen(logged);

	(void)level;
	if (n < sizeof(logged) - 1)
		vsnprintf(logged + n, sizeof(logged) - n, fmt, ap);
}

static void expect_option(const char *name, const char *want)
{
	char buf[64];

	cr_assert_eq(usft_get_option(name, buf, sizeof(buf)), 0);
	cr_expect_str_eq(buf, want, "%s is %s, expected %s", name, buf, want);
}

Test(usft_set_option, sync_signal_refuses_signals_already_taken)
{
	/* SIGTRAP is usft's own, the rest are faults, uncatchable, libc's or job control */
	static const int bad[] = { SIGTRAP, SIGHUP, SIGINT, SIGILL, SIGABRT, SIGBUS, SIGFPE,
				   SIGKILL, SIGSEGV, SIGPIPE, SIGALRM, SIGCHLD, SIGCONT, SIGSTOP,
				   SIGTSTP, SIGSYS, 32, 33 };
	char v[16];

	usft_set_print(capture);
	cr_assert_eq(usft_init(), 0);
	for (size_t i = 0; i < TC_ARRAY_SIZE(bad); i++) {
		logged[0] = 0;
		snprintf(v, sizeof(v), "%d", bad[i]);
		errno = 0;
		cr_expect_eq(usft_set_option("sync_signal", v), -EINVAL, "sync_signal=%s", v);
		cr_expect_eq(errno, EINVAL);
		cr_expect(strstr(logged, "sync_signal") && strstr(logged, "SIGRTMIN"),
			  "sync_signal=%s: the message names the option and the fix: %s", v, logged);
		expect_option("sync_signal", "0");
	}
	logged[0] = 0;
	cr_expect_eq(usft_set_option("sync_signal", "5"), -EINVAL);
	cr_expect(strstr(logged, "SIGTRAP"), "the message names SIGTRAP: %s", logged);
}

Test(usft_set_option, sync_signal_takes_user_and_realtime_signals)
{
	char v[16];

	cr_assert_eq(usft_init(), 0);
	snprintf(v, sizeof(v), "%d", SIGUSR1);
	cr_expect_eq(usft_set_option("sync_signal", v), 0);
	expect_option("sync_signal", v);
	snprintf(v, sizeof(v), "%d", SIGRTMIN + 3);
	cr_expect_eq(usft_set_option("sync_signal", v), 0);
	expect_option("sync_signal", v);
	snprintf(v, sizeof(v), "%d", SIGRTMAX);
	cr_expect_eq(usft_set_option("sync_signal", v), 0);
	cr_expect_eq(usft_set_option("sync_signal", "0"), 0);
	expect_option("sync_signal", "0");
}

Test(usft_set_option, sync_refuses_other_values)
{
	static const char *const bad[] = { "2", "-1", "fast", "", "0x", "membarrier1", "1 " };

	usft_set_print(capture);
	cr_assert_eq(usft_init(), 0);
	for (size_t i = 0; i < TC_ARRAY_SIZE(bad); i++) {
		logged[0] = 0;
		cr_expect_eq(usft_set_option("sync", bad[i]), -EINVAL, "sync='%s'", bad[i]);
		cr_expect(strstr(logged, "membarrier") && strstr(logged, "signal"),
			  "sync='%s': the message lists the values: %s", bad[i], logged);
		expect_option("sync", "membarrier");
	}
	cr_expect_eq(usft_set_option("sync", "signal"), 0);
	expect_option("sync", "signal");
	cr_expect_eq(usft_set_option("sync", "0"), 0);
	expect_option("sync", "membarrier");
}

/* USFT_OPTIONS is read once, at initialisation: each test runs in its own process */
Test(USFT_OPTIONS, bad_sync_signal_is_ignored_with_a_message)
{
	setenv("USFT_OPTIONS", "sync_signal=5,sync=signal", 1);
	usft_set_print(capture);
	cr_assert_eq(usft_init(), 0);
	cr_expect(strstr(logged, "sync_signal=5") && strstr(logged, "SIGTRAP") &&
		  strstr(logged, "SIGRTMIN"), "USFT_OPTIONS: the message names cause and fix: %s",
		  logged);
	expect_option("sync_signal", "0");
	expect_option("sync", "signal");	/* the good option next to it still applies */
}
