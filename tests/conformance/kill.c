// SPDX-License-Identifier: MIT
/*
 * Kill switch: a site whose bytes are not what the runtime expects makes the
 * compare-then-write pass fail -> ftrace_bug() -> the runtime is dead: every
 * call returns -ENODEV and no byte of text changes any more.
 * Kernel: ftrace_bug(), ftrace_kill(), ftrace_replace_code() (the x86 two-pass
 * verify of arch/x86/kernel/ftrace.c).
 * ftrace_bug() prints a diagnostic to stderr in these tests; that is expected.
 */
#include <errno.h>
#include <string.h>

#include "test_common.h"

#define DEF(name, k)                     \
	TRACEE long name(long x)         \
	{                                \
		TRACEE_BODY();           \
		return x * (k) + 1;      \
	}

DEF(cf_kill_foreign, 3)
DEF(cf_kill_a, 5)
DEF(cf_kill_b, 7)
DEF(cf_kill_c, 11)
DEF(cf_kill_idle, 13)

#if defined(__aarch64__)
/* "mov x0, x0": harmless at the site, but not the runtime's NOP */
static const unsigned char foreign_nop[TC_SITE_SIZE] = { 0xe0, 0x03, 0x00, 0xaa };
#else
/* "nopw 0x0(%rax)": a valid 5-byte NOP that is not the runtime's nop5 */
static const unsigned char foreign_nop[TC_SITE_SIZE] = { 0x66, 0x0f, 0x1f, 0x40, 0x00 };
#endif

static const void *const others[] = {
	(const void *)cf_kill_a, (const void *)cf_kill_b, (const void *)cf_kill_c,
	(const void *)cf_kill_idle,
};

static void make_foreign(const void *fn, const unsigned char *bytes)
{
	unsigned char b[TC_SITE_SIZE];
	char s[32];
	int r;

	r = tc_poke_text(tc_site(fn), bytes, TC_SITE_SIZE);
	cr_assert_eq(r, 0, "poking text failed: %d", r);
	cr_assert_eq(tc_read_site(fn, b), TC_SITE_SIZE);
	cr_assert(memcmp(b, bytes, TC_SITE_SIZE) == 0, "usft_site_bytes shows %s",
		  tc_fmt_bytes(b, TC_SITE_SIZE, s));
}

static void expect_foreign(const void *fn, const unsigned char *bytes)
{
	unsigned char b[TC_SITE_SIZE];
	char s[32];

	cr_assert_eq(tc_read_site(fn, b), TC_SITE_SIZE);
	cr_assert(memcmp(b, bytes, TC_SITE_SIZE) == 0,
		  "foreign site was rewritten: now %s", tc_fmt_bytes(b, TC_SITE_SIZE, s));
}

static void expect_dead(struct ftrace_ops *registered_or_null)
{
	static struct tc_counter fresh;
	unsigned long ips[1] = { (unsigned long)cf_kill_a };

	cr_assert_eq(tc_stat().disabled, 1, "usft_stat().disabled not set");
	tc_counter_init(&fresh, 0);

	errno = 0;
	cr_assert_eq(register_ftrace_function(&fresh.ops), -ENODEV);
	cr_assert_eq(errno, ENODEV);
	cr_assert_eq(unregister_ftrace_function(&fresh.ops), -ENODEV);
	if (registered_or_null)
		cr_assert_eq(unregister_ftrace_function(registered_or_null), -ENODEV);
	cr_assert_eq(tc_set_filter(&fresh.ops, "cf_kill_a", 1), -ENODEV);
	cr_assert_eq(tc_set_notrace(&fresh.ops, "cf_kill_a", 1), -ENODEV);
	cr_assert_eq(ftrace_set_filter_ip(&fresh.ops, (unsigned long)cf_kill_a, 0, 0), -ENODEV);
	cr_assert_eq(ftrace_set_filter_ips(&fresh.ops, ips, 1, 0, 0), -ENODEV);
	cr_assert_eq(usft_set_ftrace_enabled(1), -ENODEV);
	cr_assert_eq(usft_init(), -ENODEV);
	cr_assert_eq(tc_count(&fresh), 0);
}

Test(ftrace_bug, foreign_site_in_filter_kills_runtime)
{
	static struct tc_counter c;
	struct tc_snapshot snap;
	int r;

	cr_assert_eq(usft_init(), 0);
	make_foreign(cf_kill_foreign, foreign_nop);
	tc_snapshot_take(&snap, others, (int)TC_ARRAY_SIZE(others));
	for (int i = 0; i < snap.n; i++)
		cr_assert_eq(memcmp(snap.bytes[i], tc_nop5, TC_SITE_SIZE), 0);

	tc_counter_init(&c, 0);
	/* the foreign site sits between selected good sites */
	cr_assert_eq(tc_set_filter(&c.ops, "cf_kill_a cf_kill_foreign cf_kill_b cf_kill_c", 1), 0);
	errno = 0;
	r = register_ftrace_function(&c.ops);
	cr_assert_eq(r, -ENODEV, "register with a foreign site returned %d", r);
	cr_assert_eq(errno, ENODEV);

	expect_foreign(cf_kill_foreign, foreign_nop);
	r = tc_snapshot_diff(&snap);
	cr_assert_eq(r, -1, "site %d changed although the verify pass failed", r);

	expect_dead(&c.ops);
	expect_foreign(cf_kill_foreign, foreign_nop);
	cr_assert_eq(tc_snapshot_diff(&snap), -1);

	/* the program keeps running: every function still works */
	cr_assert_eq(cf_kill_foreign(1), 4);
	cr_assert_eq(cf_kill_a(1), 6);
	cr_assert_eq(cf_kill_b(1), 8);
	cr_assert_eq(cf_kill_c(1), 12);
	cr_assert_eq(tc_count(&c), 0);
}

Test(ftrace_bug, jmp_at_site_kills_runtime)
{
#if defined(__aarch64__)
	static const unsigned char jmp0[TC_SITE_SIZE] = { 0x01, 0, 0, 0x14 };	/* b .+4 */
#else
	static const unsigned char jmp0[TC_SITE_SIZE] = { 0xe9, 0, 0, 0, 0 };
#endif
	static struct tc_counter c;
	struct tc_snapshot snap;

	cr_assert_eq(usft_init(), 0);
	make_foreign(cf_kill_foreign, jmp0);
	tc_snapshot_take(&snap, others, (int)TC_ARRAY_SIZE(others));
	tc_counter_init(&c, 0);
	cr_assert_eq(tc_set_filter(&c.ops, "cf_kill_*", 1), 0);
	cr_assert_eq(register_ftrace_function(&c.ops), -ENODEV);
	expect_foreign(cf_kill_foreign, jmp0);
	cr_assert_eq(tc_snapshot_diff(&snap), -1);
	expect_dead(NULL);
	cr_assert_eq(cf_kill_foreign(2), 7);
}

Test(ftrace_bug, foreign_site_outside_filter_is_ignored)
{
	static struct tc_counter c;

	cr_assert_eq(usft_init(), 0);
	make_foreign(cf_kill_foreign, foreign_nop);
	tc_counter_init(&c, 0);
	cr_assert_eq(tc_set_filter(&c.ops, "cf_kill_a", 1), 0);
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	expect_call(cf_kill_a);
	expect_foreign(cf_kill_foreign, foreign_nop);
	cf_kill_a(0);
	cr_assert_eq(tc_count(&c), 1);
	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	expect_nop5(cf_kill_a);
	expect_foreign(cf_kill_foreign, foreign_nop);
	cr_assert_eq(tc_stat().disabled, 0);
}

Test(ftrace_bug, tampered_enabled_site_kills_on_update)
{
	static struct tc_counter c;
	unsigned char b_before[TC_SITE_SIZE], b_after[TC_SITE_SIZE];
	int r;

	cr_assert_eq(usft_init(), 0);
	tc_counter_init(&c, 0);
	cr_assert_eq(tc_set_filter(&c.ops, "cf_kill_a cf_kill_b", 1), 0);
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	expect_call(cf_kill_a);
	expect_call(cf_kill_b);
	cr_assert_eq(tc_read_site(cf_kill_b, b_before), TC_SITE_SIZE);

	/* someone else NOPs an enabled site behind the runtime's back */
	make_foreign(cf_kill_a, foreign_nop);

	/* the kernel's ftrace_shutdown() returns 0 even when the update died;
	 * what matters is what follows */
	r = unregister_ftrace_function(&c.ops);
	cr_assert(r == 0 || r == -ENODEV, "unregister returned %d", r);
	expect_foreign(cf_kill_a, foreign_nop);
	cr_assert_eq(tc_read_site(cf_kill_b, b_after), TC_SITE_SIZE);
	cr_assert_eq(memcmp(b_before, b_after, TC_SITE_SIZE), 0,
		     "another site was rewritten in the batch that failed verification");
	expect_dead(NULL);
	expect_nop5(cf_kill_c);
	expect_nop5(cf_kill_idle);
}

Test(ftrace_bug, filter_change_onto_foreign_site_kills_runtime)
{
	static struct tc_counter c;
	int r;

	cr_assert_eq(usft_init(), 0);
	tc_counter_init(&c, 0);
	cr_assert_eq(tc_set_filter(&c.ops, "cf_kill_a", 1), 0);
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	expect_call(cf_kill_a);
	make_foreign(cf_kill_foreign, foreign_nop);

	r = tc_set_filter(&c.ops, "cf_kill_foreign cf_kill_c", 0);
	cr_assert(r == 0 || r == -ENODEV, "set_filter onto a foreign site returned %d", r);
	expect_foreign(cf_kill_foreign, foreign_nop);
	expect_nop5(cf_kill_c);
	expect_call(cf_kill_a);
	expect_dead(NULL);
	expect_call(cf_kill_a);
}
