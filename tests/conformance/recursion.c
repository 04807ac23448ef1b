// SPDX-License-Identifier: MIT
/*
 * Recursion protection: trace_selftest_function_recursion (with and without
 * FTRACE_OPS_FL_RECURSION) and ftrace_test_recursion_trylock/unlock
 * semantics (per-thread bits with one TRANSITION level).
 * Kernel: include/linux/trace_recursion.h, trace_selftest.c.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "test_common.h"

TRACEE long cf_rec_func(long x)
{
	TRACEE_BODY();
	return x + 1;
}

TRACEE long cf_rec_other(long x)
{
	TRACEE_BODY();
	return x + 2;
}

static int recursion_cnt;

/* kernel trace_selftest_test_recursion_func: relies on the core's protection */
static notrace void recursion_func(unsigned long ip, unsigned long pip,
				   struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	if (recursion_cnt++ > 10)
		return;
	cf_rec_func(0);
}

/* kernel trace_selftest_test_recursion_safe_func: guards itself */
static notrace void recursion_safe_func(unsigned long ip, unsigned long pip,
					struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	if (recursion_cnt++)
		return;
	cf_rec_func(0);
}

static void filter_func(struct ftrace_ops *ops)
{
	cr_assert_eq(tc_set_filter(ops, "cf_rec_func", 1), 0);
}

Test(trace_selftest_function_recursion, core_blocks_reentry_with_recursion_flag)
{
	static struct ftrace_ops ops = {
		.func = recursion_func,
		.flags = FTRACE_OPS_FL_RECURSION,
	};

	cr_assert_eq(usft_init(), 0);
	filter_func(&ops);
	cr_assert_eq(register_ftrace_function(&ops), 0);
	expect_call(cf_rec_func);
	for (int i = 0; i < 5; i++) {
		recursion_cnt = 0;
		cr_assert_eq(cf_rec_func(i), i + 1);
		cr_assert(recursion_cnt == 1 || recursion_cnt == 2,
			  "callback not called once (or twice): %d", recursion_cnt);
	}
	cr_assert_eq(unregister_ftrace_function(&ops), 0);
	expect_nop5(cf_rec_func);
}

Test(trace_selftest_function_recursion, list_path_blocks_reentry)
{
	static struct ftrace_ops ops = {
		.func = recursion_func,
		.flags = FTRACE_OPS_FL_RECURSION,
	};
	static struct tc_counter other;

	/* a second ops on the same site forces the shared list function */
	tc_counter_init(&other, 0);
	filter_func(&other.ops);
	filter_func(&ops);
	cr_assert_eq(register_ftrace_function(&other.ops), 0);
	cr_assert_eq(register_ftrace_function(&ops), 0);
	for (int i = 0; i < 5; i++) {
		recursion_cnt = 0;
		cf_rec_func(i);
		cr_assert(recursion_cnt == 1 || recursion_cnt == 2,
			  "callback not called once (or twice): %d", recursion_cnt);
	}
	cr_assert_eq(unregister_ftrace_function(&ops), 0);
	cr_assert_eq(unregister_ftrace_function(&other.ops), 0);
	expect_nop5(cf_rec_func);
}

Test(trace_selftest_function_recursion, no_flag_callback_runs_once_per_call)
{
	static struct ftrace_ops ops = { .func = recursion_safe_func };

	filter_func(&ops);
	cr_assert_eq(register_ftrace_function(&ops), 0);
	recursion_cnt = 1;
	cf_rec_func(0);
	cr_assert_eq(recursion_cnt, 2, "callback not called exactly once: %d", recursion_cnt - 1);
	cr_assert_eq(unregister_ftrace_function(&ops), 0);
}

Test(trace_selftest_function_recursion, no_flag_core_adds_no_protection)
{
	static struct ftrace_ops ops = { .func = recursion_safe_func };

	/* the callback recurses into itself once and stops on its own */
	filter_func(&ops);
	cr_assert_eq(register_ftrace_function(&ops), 0);
	recursion_cnt = 0;
	cf_rec_func(0);
	cr_assert_eq(recursion_cnt, 2, "expected exactly one re-entry: %d", recursion_cnt);
	cr_assert_eq(unregister_ftrace_function(&ops), 0);
}

/* ---- ftrace_test_recursion_trylock ------------------------------------- */

Test(ftrace_test_recursion_trylock, allows_one_transition_level)
{
	int b1, b2, b3, b4;

	cr_assert_eq(usft_init(), 0);
	b1 = ftrace_test_recursion_trylock(1, 2);
	cr_assert_geq(b1, 0, "first trylock failed");
	b2 = ftrace_test_recursion_trylock(1, 2);
	cr_assert_geq(b2, 0, "second level must pass through the TRANSITION bit");
	cr_assert_neq(b1, b2, "transition level returned the same bit");
	b3 = ftrace_test_recursion_trylock(1, 2);
	cr_assert_eq(b3, -1, "third level must be refused");
	ftrace_test_recursion_unlock(b2);
	ftrace_test_recursion_unlock(b1);

	b4 = ftrace_test_recursion_trylock(1, 2);
	cr_assert_geq(b4, 0, "unlock did not restore");
	cr_assert_eq(b4, b1);
	ftrace_test_recursion_unlock(b4);
}

Test(ftrace_test_recursion_trylock, unlock_of_transition_frees_one_level)
{
	int b1, b2, b3;

	b1 = ftrace_test_recursion_trylock(1, 2);
	b2 = ftrace_test_recursion_trylock(1, 2);
	cr_assert(b1 >= 0 && b2 >= 0);
	ftrace_test_recursion_unlock(b2);
	b3 = ftrace_test_recursion_trylock(1, 2);
	cr_assert_eq(b3, b2, "transition level not available again after its unlock");
	cr_assert_eq(ftrace_test_recursion_trylock(1, 2), -1);
	ftrace_test_recursion_unlock(b3);
	ftrace_test_recursion_unlock(b1);
}

static void *trylock_thread(void *arg)
{
	int *out = arg;
	int b = ftrace_test_recursion_trylock(3, 4);

	out[0] = b;
	if (b >= 0)
		ftrace_test_recursion_unlock(b);
	return NULL;
}

Test(ftrace_test_recursion_trylock, is_per_thread)
{
	pthread_t t;
	int res[1] = { -2 };
	int b1, b2;

	b1 = ftrace_test_recursion_trylock(1, 2);
	b2 = ftrace_test_recursion_trylock(1, 2);
	cr_assert(b1 >= 0 && b2 >= 0);
	/* this thread is now saturated; another thread is not affected */
	cr_assert_eq(pthread_create(&t, NULL, trylock_thread, res), 0);
	pthread_join(t, NULL);
	cr_assert_geq(res[0], 0, "recursion bits leaked across threads");
	ftrace_test_recursion_unlock(b2);
	ftrace_test_recursion_unlock(b1);
}

/* A callback may use the FTRACE group while the core holds the LIST group. */
static atomic_int trylock_in_cb_ok, trylock_in_cb_fail;

static notrace void trylock_cb(unsigned long ip, unsigned long pip,
			       struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	int bit = ftrace_test_recursion_trylock(ip, pip);

	if (bit < 0) {
		atomic_fetch_add(&trylock_in_cb_fail, 1);
		return;
	}
	atomic_fetch_add(&trylock_in_cb_ok, 1);
	ftrace_test_recursion_unlock(bit);
}

static void check_trylock_in_callback(int idx, unsigned long flags, bool shared)
{
	static struct ftrace_ops opss[5];
	static struct tc_counter others[5];
	struct ftrace_ops *ops = &opss[idx];
	struct tc_counter *other = &others[idx];

	ops->func = trylock_cb;
	ops->flags = flags;
	atomic_store(&trylock_in_cb_ok, 0);
	atomic_store(&trylock_in_cb_fail, 0);
	filter_func(ops);
	cr_assert_eq(register_ftrace_function(ops), 0);
	if (shared) {
		tc_counter_init(other, 0);
		filter_func(&other->ops);
		cr_assert_eq(register_ftrace_function(&other->ops), 0);
	}
	cf_rec_func(0);
	cf_rec_func(0);
	cr_assert_eq(atomic_load(&trylock_in_cb_ok), 2,
		     "flags %#lx shared %d: trylock in callback ok=%d fail=%d", flags, shared,
		     atomic_load(&trylock_in_cb_ok), atomic_load(&trylock_in_cb_fail));
	cr_assert_eq(atomic_load(&trylock_in_cb_fail), 0);
	if (shared)
		cr_assert_eq(unregister_ftrace_function(&other->ops), 0);
	cr_assert_eq(unregister_ftrace_function(ops), 0);
}

Test(ftrace_test_recursion_trylock, usable_inside_callbacks)
{
	check_trylock_in_callback(0, 0, false);
	check_trylock_in_callback(1, FTRACE_OPS_FL_RECURSION, false);
	check_trylock_in_callback(2, 0, true);
	check_trylock_in_callback(3, FTRACE_OPS_FL_RECURSION, true);
	check_trylock_in_callback(4, FTRACE_OPS_FL_SAVE_REGS | FTRACE_OPS_FL_RECURSION, true);
}

/* Self-guarding callback that re-enters the traced function. */
static int guarded_runs, guarded_blocked;

static notrace void guarded_cb(unsigned long ip, unsigned long pip,
			       struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	int bit = ftrace_test_recursion_trylock(ip, pip);

	if (bit < 0) {
		guarded_blocked++;
		return;
	}
	guarded_runs++;
	cf_rec_func(0);
	ftrace_test_recursion_unlock(bit);
}

Test(ftrace_test_recursion_trylock, guards_a_reentering_callback)
{
	static struct ftrace_ops ops = { .func = guarded_cb };

	filter_func(&ops);
	cr_assert_eq(register_ftrace_function(&ops), 0);
	for (int i = 0; i < 3; i++) {
		guarded_runs = guarded_blocked = 0;
		cf_rec_func(i);
		cr_assert(guarded_runs == 1 || guarded_runs == 2,
			  "guarded callback ran %d times", guarded_runs);
		cr_assert_leq(guarded_blocked, 1);
	}
	cr_assert_eq(unregister_ftrace_function(&ops), 0);
	/* the bits are released: a fresh trylock works */
	int b = ftrace_test_recursion_trylock(0, 0);
	cr_assert_geq(b, 0);
	ftrace_test_recursion_unlock(b);
}

/* A RECURSION ops on a function called from another ops' callback. */
static struct tc_counter inner;

static notrace void calls_other_cb(unsigned long ip, unsigned long pip,
				   struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct tc_counter *c = container_of(op, struct tc_counter, ops);

	atomic_fetch_add(&c->count, 1);
	cf_rec_other(0);
}

Test(trace_selftest_function_recursion, callback_calling_another_traced_function)
{
	static struct tc_counter outer;

	tc_counter_init(&outer, FTRACE_OPS_FL_RECURSION);
	outer.ops.func = calls_other_cb;
	tc_counter_init(&inner, FTRACE_OPS_FL_RECURSION);
	filter_func(&outer.ops);
	cr_assert_eq(tc_set_filter(&inner.ops, "cf_rec_other", 1), 0);
	cr_assert_eq(register_ftrace_function(&outer.ops), 0);
	cr_assert_eq(register_ftrace_function(&inner.ops), 0);
	long first;

	cf_rec_func(0);
	cr_assert_eq(tc_count(&outer), 1);
	/* inner runs in the callback context: through the TRANSITION level or
	 * dropped, but never more than once */
	first = tc_count(&inner);
	cr_assert_leq(first, 1);
	cf_rec_other(0);
	cr_assert_eq(tc_count(&outer), 1);
	cr_assert_eq(tc_count(&inner), first + 1, "direct call of the inner function not traced");
	cr_assert_eq(unregister_ftrace_function(&inner.ops), 0);
	cr_assert_eq(unregister_ftrace_function(&outer.ops), 0);
}
