// SPDX-License-Identifier: MIT
/*
 * Port of kernel/trace/trace_selftest.c: trace_selftest_ops() (the
 * three-probe counting matrix with a heap ops and a live "!" removal) and
 * trace_selftest_startup_dynamic_tracing().
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "test_common.h"

/* DYN_FTRACE_TEST_NAME / DYN_FTRACE_TEST_NAME2 */
TRACEE long cf_ops_func1(long x)
{
	TRACEE_BODY();
	return x + 1;
}

TRACEE long cf_ops_func2(long x)
{
	TRACEE_BODY();
	return x + 2;
}

TRACEE long cf_ops_other1(long x)
{
	TRACEE_BODY();
	return x + 3;
}

TRACEE long cf_ops_other2(long x)
{
	TRACEE_BODY();
	return x + 4;
}

static atomic_long probe1_cnt, probe2_cnt, probe3_cnt, dyn_cnt;

static notrace void probe1_func(unsigned long ip, unsigned long pip,
				struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	atomic_fetch_add(&probe1_cnt, 1);
}

static notrace void probe2_func(unsigned long ip, unsigned long pip,
				struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	atomic_fetch_add(&probe2_cnt, 1);
}

static notrace void probe3_func(unsigned long ip, unsigned long pip,
				struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	atomic_fetch_add(&probe3_cnt, 1);
}

static notrace void dyn_func(unsigned long ip, unsigned long pip,
			     struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	atomic_fetch_add(&dyn_cnt, 1);
}

static struct ftrace_ops test_probe1, test_probe2, test_probe3;

#define expect_counts(a, b, c, what)                                            \
	cr_assert(atomic_load(&probe1_cnt) == (a) &&                            \
		  atomic_load(&probe2_cnt) == (b) &&                            \
		  atomic_load(&probe3_cnt) == (c),                              \
		  "%s: counts (%ld,%ld,%ld), expected (%d,%d,%d)", what,        \
		  atomic_load(&probe1_cnt), atomic_load(&probe2_cnt),           \
		  atomic_load(&probe3_cnt), (a), (b), (c))

static void reset_counts(void)
{
	atomic_store(&probe1_cnt, 0);
	atomic_store(&probe2_cnt, 0);
	atomic_store(&probe3_cnt, 0);
	atomic_store(&dyn_cnt, 0);
}

/*
 * trace_selftest_ops(); @flags go on every probe (the kernel runs it per
 * tracer).  @global_live: the second pass, with the global ops (filtered to
 * cf_ops_func1 through ftrace_set_global_filter()) registered alongside, so
 * cf_ops_func1 stays patched when the probes are gone.
 */
static void selftest_ops_pass(unsigned long flags, bool global_live)
{
	struct ftrace_ops *dyn_ops;

	/* static probes, as in the kernel: set up once, reused by a second run */
	test_probe1.func = probe1_func;
	test_probe2.func = probe2_func;
	test_probe3.func = probe3_func;
	tc_ops_set_attr(&test_probe1, flags);
	tc_ops_set_attr(&test_probe2, flags);
	tc_ops_set_attr(&test_probe3, flags);
	reset_counts();

	cr_assert_eq(tc_set_filter(&test_probe1, "cf_ops_func1", 1), 0);
	cr_assert_eq(tc_set_filter(&test_probe2, "cf_ops_func2", 1), 0);
	cr_assert_eq(tc_set_filter(&test_probe3, "cf_ops_func1", 1), 0);
	cr_assert_eq(tc_set_filter(&test_probe3, "cf_ops_func2", 0), 0);

	cr_assert_eq(register_ftrace_function(&test_probe1), 0);
	cr_assert_eq(register_ftrace_function(&test_probe2), 0);
	cr_assert_eq(register_ftrace_function(&test_probe3), 0);
	expect_call(cf_ops_func1);
	expect_call(cf_ops_func2);
	expect_nop5(cf_ops_other1);

	cf_ops_func1(0);
	expect_counts(1, 0, 1, "after func1");
	cf_ops_func2(0);
	expect_counts(1, 1, 2, "after func2");

	dyn_ops = calloc(1, sizeof(*dyn_ops));
	cr_assert_not_null(dyn_ops);
	dyn_ops->func = dyn_func;
	dyn_ops->flags = flags;
	cr_assert_eq(register_ftrace_function(dyn_ops), 0);
	cr_assert(dyn_ops->flags & FTRACE_OPS_FL_DYNAMIC, "heap ops not DYNAMIC");
	expect_call(cf_ops_other1);	/* unfiltered: every site */

	cf_ops_func1(0);
	expect_counts(2, 1, 3, "after func1 with dyn ops");
	cr_assert_gt(atomic_load(&dyn_cnt), 0, "dynamic ops not called");
	cf_ops_func2(0);
	expect_counts(2, 2, 4, "after func2 with dyn ops");

	/* remove func1 from probe3 while it is live */
	cr_assert_eq(tc_set_filter(&test_probe3, "!cf_ops_func1", 0), 0);
	expect_call(cf_ops_func1);	/* probe1 and dyn still want it */
	cf_ops_func1(0);
	expect_counts(3, 2, 4, "after func1 with probe3 !func1");
	cf_ops_func2(0);
	expect_counts(3, 3, 5, "after func2 with probe3 !func1");

	cr_assert_eq(unregister_ftrace_function(dyn_ops), 0);
	free(dyn_ops);
	expect_nop5(cf_ops_other1);

	cr_assert_eq(unregister_ftrace_function(&test_probe1), 0);
	cr_assert_eq(unregister_ftrace_function(&test_probe2), 0);
	cr_assert_eq(unregister_ftrace_function(&test_probe3), 0);
	if (global_live)
		expect_call(cf_ops_func1);
	else
		expect_nop5(cf_ops_func1);
	expect_nop5(cf_ops_func2);

	/* Make sure everything is off */
	reset_counts();
	cf_ops_func1(0);
	cf_ops_func1(0);
	cf_ops_func2(0);
	cf_ops_other1(0);
	expect_counts(0, 0, 0, "after unregistering all");
	cr_assert_eq(atomic_load(&dyn_cnt), 0);
}

static void selftest_ops(unsigned long flags)
{
	selftest_ops_pass(flags, false);
}

static atomic_long global_cnt;

static notrace void global_func(unsigned long ip, unsigned long pip,
				struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	atomic_fetch_add(&global_cnt, 1);
}

/*
 * The kernel's second trace_selftest_ops() pass
 * (trace_selftest_startup_dynamic_tracing() with cnt 2): the function
 * tracer's global ops, filtered with ftrace_set_global_filter(), counts
 * alongside the probes and must be called; the probes' counts are those of
 * the first pass.
 */
Test(trace_selftest_ops, second_pass_with_the_global_ops)
{
	static struct ftrace_ops global = { .func = global_func };

	selftest_ops(0);	/* first pass */
	ftrace_ops_set_global_filter(&global);
	errno = 0;
	ftrace_set_global_filter((unsigned char *)"cf_ops_func1", -1, 1);
	cr_assert_eq(errno, 0);
	cr_assert_eq(register_ftrace_function(&global), 0);
	selftest_ops_pass(0, true);
	/* cf_ops_func1 ran 5 times in the pass; nothing else reaches the global ops */
	cr_assert_eq(atomic_load(&global_cnt), 5, "global ops called %ld times",
		     atomic_load(&global_cnt));
	cr_assert_eq(unregister_ftrace_function(&global), 0);
	ftrace_set_global_filter(NULL, 0, 1);
	expect_nop5(cf_ops_func1);
}

Test(trace_selftest_ops, counting_matrix)
{
	selftest_ops(0);
}

Test(trace_selftest_ops, counting_matrix_with_recursion_flag)
{
	selftest_ops(FTRACE_OPS_FL_RECURSION);
}

Test(trace_selftest_ops, counting_matrix_with_save_regs)
{
	selftest_ops(FTRACE_OPS_FL_SAVE_REGS);
}

Test(trace_selftest_ops, counting_matrix_twice_in_one_process)
{
	/* the kernel runs it twice; the second run must start from clean state */
	selftest_ops(0);
	selftest_ops(FTRACE_OPS_FL_RECURSION);
	selftest_ops(0);
}

Test(trace_selftest_startup_dynamic_tracing, filtered_function_counted_once)
{
	static struct tc_counter c;

	tc_counter_init(&c, 0);
	cr_assert_eq(tc_set_filter(&c.ops, "*ops_func2", 1), 0);
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	expect_call(cf_ops_func2);
	expect_nop5(cf_ops_func1);
	expect_nop5(cf_ops_other1);
	expect_nop5(cf_ops_other2);

	/* other functions run: the buffer stays empty */
	for (int i = 0; i < 100; i++) {
		cf_ops_func1(i);
		cf_ops_other1(i);
		cf_ops_other2(i);
	}
	cr_assert_eq(tc_count(&c), 0);

	cr_assert_eq(cf_ops_func2(1), 3);
	cr_assert_eq(tc_count(&c), 1);
	cr_assert_eq(atomic_load(&c.last_ip), tc_site(cf_ops_func2));

	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	expect_nop5(cf_ops_func2);
	cf_ops_func2(1);
	cr_assert_eq(tc_count(&c), 1);
}
