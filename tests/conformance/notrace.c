// SPDX-License-Identifier: MIT
/*
 * Notrace hashes: an ops traces ip iff (filter empty || ip in filter) &&
 * !(ip in notrace) (ftrace_ops_test, hash_contains_ip).
 * Kernel: ftrace_ops_test(), ftrace_set_notrace() (kernel/trace/ftrace.c).
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

DEF(cf_ntr_red, 3)
DEF(cf_ntr_green, 5)
DEF(cf_ntr_blue, 7)
DEF(cf_ntr_cyan, 11)
DEF(cf_xntr_outside, 13)	/* not in the table, not matched by cf_ntr_* */

enum { RED, GREEN, BLUE, CYAN, NR_FUNCS };
static const tc_fn_t funcs[NR_FUNCS] = { cf_ntr_red, cf_ntr_green, cf_ntr_blue, cf_ntr_cyan };
static const char *const names[NR_FUNCS] = { "cf_ntr_red", "cf_ntr_green", "cf_ntr_blue",
					     "cf_ntr_cyan" };
#define B(i) (1UL << (i))
#define ALL_FUNCS ((1UL << NR_FUNCS) - 1)

static struct tc_hits h;

static void expect_live_selection(unsigned long want, const char *what)
{
	unsigned long got, bad;

	for (int i = 0; i < NR_FUNCS; i++) {
		if (want & B(i))
			cr_assert(tc_is_call((const void *)funcs[i]), "%s: %s should be a call",
				  what, names[i]);
		else
			cr_assert(tc_is_nop5((const void *)funcs[i]), "%s: %s should be nop5",
				  what, names[i]);
	}
	got = tc_hits_mask(&h, funcs, &bad);
	cr_assert_eq(bad, 0, "%s", what);
	cr_assert_eq(got, want, "%s: selected %#lx, expected %#lx", what, got, want);
}

static void expect_selection(unsigned long want, const char *what)
{
	cr_assert_eq(register_ftrace_function(&h.ops), 0, "%s", what);
	expect_live_selection(want, what);
	cr_assert_eq(unregister_ftrace_function(&h.ops), 0, "%s", what);
	for (int i = 0; i < NR_FUNCS; i++)
		cr_assert(tc_is_nop5((const void *)funcs[i]));
}

/* Start over with the one static hits ops: fresh the first time, reused after. */
static void init_hits(void)
{
	cr_assert_eq(usft_init(), 0);
	if (!h.ops.func) {
		tc_hits_init(&h, funcs, NR_FUNCS, 0);
	} else {
		cr_assert_not(h.ops.flags & FTRACE_OPS_FL_ENABLED);
		ftrace_free_filter(&h.ops);
		tc_hits_reset(&h);
	}
}

Test(ftrace_set_notrace, excludes_from_filter)
{
	init_hits();
	cr_assert_eq(tc_set_filter(&h.ops, "cf_ntr_*", 1), 0);
	cr_assert_eq(tc_set_notrace(&h.ops, "cf_ntr_green", 1), 0);
	expect_selection(B(RED) | B(BLUE) | B(CYAN), "filter cf_ntr_* notrace green");
}

Test(ftrace_set_notrace, empty_filter_means_everything_but)
{
	init_hits();
	cr_assert_eq(tc_set_notrace(&h.ops, "cf_ntr_red cf_ntr_blue", 1), 0);
	cr_assert_eq(register_ftrace_function(&h.ops), 0);
	expect_live_selection(B(GREEN) | B(CYAN), "notrace red blue, empty filter");
	/* everything else in the program is traced too */
	atomic_store(&h.other, 0);
	cf_xntr_outside(1);
	cr_assert_geq(atomic_load(&h.other), 1, "a function outside the notrace set was not traced");
	cr_assert_gt(tc_stat().nr_enabled, 2, "empty filter must enable every site");
	cr_assert_eq(unregister_ftrace_function(&h.ops), 0);
	cr_assert_eq(tc_stat().nr_enabled, 0);
}

Test(ftrace_set_notrace, intersects_with_filter)
{
	init_hits();
	cr_assert_eq(tc_set_filter(&h.ops, "cf_ntr_red cf_ntr_green", 1), 0);
	cr_assert_eq(tc_set_notrace(&h.ops, "cf_ntr_green cf_ntr_blue", 1), 0);
	expect_selection(B(RED), "filter {red,green} notrace {green,blue}");
	/* notrace wins over the filter even for every filtered ip */
	cr_assert_eq(tc_set_notrace(&h.ops, "cf_ntr_red", 0), 0);
	expect_selection(0, "notrace covers the whole filter");
}

Test(ftrace_set_notrace, bang_removes_from_notrace)
{
	init_hits();
	cr_assert_eq(tc_set_filter(&h.ops, "cf_ntr_*", 1), 0);
	cr_assert_eq(tc_set_notrace(&h.ops, "cf_ntr_*", 1), 0);
	expect_selection(0, "notrace all");
	cr_assert_eq(tc_set_notrace(&h.ops, "!cf_ntr_blue", 0), 0);
	expect_selection(B(BLUE), "!blue from notrace");
	cr_assert_eq(tc_set_notrace(&h.ops, "!cf_ntr_c*", 0), 0);
	expect_selection(B(BLUE) | B(CYAN), "!c* from notrace");
}

Test(ftrace_set_notrace, reset_and_append)
{
	init_hits();
	cr_assert_eq(tc_set_filter(&h.ops, "cf_ntr_*", 1), 0);
	cr_assert_eq(tc_set_notrace(&h.ops, "cf_ntr_red", 1), 0);
	cr_assert_eq(tc_set_notrace(&h.ops, "cf_ntr_green", 0), 0);
	expect_selection(B(BLUE) | B(CYAN), "append");
	cr_assert_eq(tc_set_notrace(&h.ops, "cf_ntr_cyan", 1), 0);
	expect_selection(B(RED) | B(GREEN) | B(BLUE), "reset");
	cr_assert_eq(ftrace_set_notrace(&h.ops, NULL, 0, 1), 0);
	expect_selection(ALL_FUNCS, "NULL reset clears notrace");
}

Test(ftrace_set_notrace, unmatched_glob_fails_and_changes_nothing)
{
	init_hits();
	cr_assert_eq(tc_set_filter(&h.ops, "cf_ntr_*", 1), 0);
	cr_assert_eq(tc_set_notrace(&h.ops, "cf_ntr_red", 1), 0);
	errno = 0;
	cr_assert_eq(tc_set_notrace(&h.ops, "cf_ntr_nosuch_zz", 1), -EINVAL);
	cr_assert_eq(errno, EINVAL);
	expect_selection(B(GREEN) | B(BLUE) | B(CYAN), "after failed notrace");
}

Test(ftrace_set_notrace, live_change_repatches)
{
	init_hits();
	cr_assert_eq(tc_set_filter(&h.ops, "cf_ntr_*", 1), 0);
	cr_assert_eq(register_ftrace_function(&h.ops), 0);
	expect_live_selection(ALL_FUNCS, "start");
	cr_assert_eq(tc_set_notrace(&h.ops, "cf_ntr_red", 1), 0);
	expect_live_selection(ALL_FUNCS & ~B(RED), "notrace red live");
	cr_assert_eq(tc_set_notrace(&h.ops, "cf_ntr_blue", 0), 0);
	expect_live_selection(B(GREEN) | B(CYAN), "notrace +blue live");
	cr_assert_eq(tc_set_notrace(&h.ops, "!cf_ntr_red", 0), 0);
	expect_live_selection(B(RED) | B(GREEN) | B(CYAN), "notrace !red live");
	cr_assert_eq(ftrace_set_notrace(&h.ops, NULL, 0, 1), 0);
	expect_live_selection(ALL_FUNCS, "notrace cleared live");
	cr_assert_eq(unregister_ftrace_function(&h.ops), 0);
}

Test(ftrace_set_notrace, two_ops_notrace_is_per_ops)
{
	static struct tc_counter a, b;

	cr_assert_eq(usft_init(), 0);
	tc_counter_init(&a, 0);
	tc_counter_init(&b, 0);
	cr_assert_eq(tc_set_filter(&a.ops, "cf_ntr_red cf_ntr_green", 1), 0);
	cr_assert_eq(tc_set_notrace(&a.ops, "cf_ntr_red", 1), 0);
	cr_assert_eq(tc_set_filter(&b.ops, "cf_ntr_red", 1), 0);
	cr_assert_eq(register_ftrace_function(&a.ops), 0);
	cr_assert_eq(register_ftrace_function(&b.ops), 0);
	expect_call(cf_ntr_red);	/* b wants it */
	expect_call(cf_ntr_green);	/* a wants it */
	expect_nop5(cf_ntr_blue);
	cf_ntr_red(1);
	cr_assert_eq(tc_count(&a), 0, "a's notrace ignored on a shared site");
	cr_assert_eq(tc_count(&b), 1);
	cf_ntr_green(1);
	cr_assert_eq(tc_count(&a), 1);
	cr_assert_eq(tc_count(&b), 1);
	cr_assert_eq(unregister_ftrace_function(&b.ops), 0);
	expect_nop5(cf_ntr_red);
	cr_assert_eq(unregister_ftrace_function(&a.ops), 0);
	expect_nop5(cf_ntr_green);
}
