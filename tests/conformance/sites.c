// SPDX-License-Identifier: MIT
/*
 * Site state transitions: nop5 <-> call as ops come and go, one vs several
 * ops on a site (per-ops trampoline vs the shared list caller), REGS
 * upgrades, unselected sites untouched, usft_stat counters.
 * Kernel: __ftrace_hash_rec_update(), ftrace_check_record(),
 * ftrace_get_addr_new(), ftrace_replace_code() (kernel/trace/ftrace.c),
 * test.d/direct/ftrace-direct.tc (its orders).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "test_common.h"

#define DEF(name, k)                     \
	TRACEE long name(long x)         \
	{                                \
		TRACEE_BODY();           \
		return x * (k) + 2;      \
	}

DEF(cf_site_f1, 3)
DEF(cf_site_f2, 5)
DEF(cf_site_f3, 7)
DEF(cf_site_f4, 11)
DEF(cf_site_idle1, 13)
DEF(cf_site_idle2, 17)

static const tc_fn_t all_funcs[] = {
	cf_site_f1, cf_site_f2, cf_site_f3, cf_site_f4, cf_site_idle1, cf_site_idle2,
};
static const char *const all_names[] = {
	"cf_site_f1", "cf_site_f2", "cf_site_f3", "cf_site_f4", "cf_site_idle1",
	"cf_site_idle2",
};
#define NR_ALL ((int)TC_ARRAY_SIZE(all_funcs))

/* The idle functions are never selected: they must stay nop5 throughout. */
#define expect_idle_untouched()                                                \
	do {                                                                   \
		expect_nop5(cf_site_idle1);                                    \
		expect_nop5(cf_site_idle2);                                    \
		cr_assert_eq(cf_site_idle1(1), 15);                            \
		cr_assert_eq(cf_site_idle2(1), 19);                            \
	} while (0)

static void expect_all_nop5(void)
{
	for (int i = 0; i < NR_ALL; i++)
		cr_assert(tc_is_nop5((const void *)all_funcs[i]), "%s not nop5", all_names[i]);
}

static bool ops_trampolines_on(void)
{
	char buf[32] = "";

	if (usft_get_option("ops_trampolines", buf, sizeof(buf)) < 0)
		return false;
	return !strcmp(buf, "1") || !strcmp(buf, "on") || !strcmp(buf, "true") ||
	       !strcmp(buf, "yes") || !strcmp(buf, "y");
}

static void filter(struct ftrace_ops *ops, const char *g)
{
	int r = tc_set_filter(ops, g, 1);

	cr_assert_eq(r, 0, "ftrace_set_filter(%s) = %d", g, r);
}

Test(usft_site_bytes, every_site_starts_nop5)
{
	cr_assert_eq(usft_init(), 0);
	expect_all_nop5();
	expect_idle_untouched();
}

/*
 * arm64: the one-time NOP -> MOV X9, X30 is not a change the architecture
 * allows under a running thread, so it is made with the other threads
 * stopped (usft_stop_machine()); here a thread runs through the very sites
 * being converted.  x86-64 never needs it (its conversions are INT3 batches).
 */
static int spin_stop;
static long spin_calls, spin_wrong;

static notrace void *site_spinner(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&spin_stop, __ATOMIC_ACQUIRE)) {
		long i = __atomic_load_n(&spin_calls, __ATOMIC_RELAXED);

		if (cf_site_f1(i) != i * 3 + 2 || cf_site_f2(i) != i * 5 + 2)
			__atomic_add_fetch(&spin_wrong, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&spin_calls, i + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

Test(sites, first_conversion_with_a_thread_running_the_sites)
{
	struct usft_stats st = { .sz = sizeof(st) };
	static struct tc_counter c;
	pthread_t t;
	long seen;

	cr_assert_eq(pthread_create(&t, NULL, site_spinner, NULL), 0);
	while (__atomic_load_n(&spin_calls, __ATOMIC_ACQUIRE) < 1000)
		sched_yield();
	cr_assert_eq(usft_init(), 0);
	cr_assert_eq(usft_stat(&st), 0);
#if defined(__aarch64__)
	cr_assert_geq(st.nr_stop_machine, 1, "MOV X9, X30 written under a running thread");
#else
	cr_assert_eq(st.nr_stop_machine, 0);
#endif
	expect_all_nop5();
	/* the thread goes on through sites that now get patched and unpatched */
	tc_counter_init(&c, 0);
	cr_assert_eq(tc_set_filter(&c.ops, "cf_site_f1", 1), 0);
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	seen = __atomic_load_n(&spin_calls, __ATOMIC_ACQUIRE);
	while (__atomic_load_n(&spin_calls, __ATOMIC_ACQUIRE) < seen + 1000)
		sched_yield();
	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	cr_assert_gt(tc_count(&c), 0);
	__atomic_store_n(&spin_stop, 1, __ATOMIC_RELEASE);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(spin_wrong, 0, "%ld wrong results", spin_wrong);
	expect_all_nop5();
}

#if defined(__aarch64__)
/*
 * A thread that runs through the sites with every signal blocked cannot be
 * stopped: the conversion writes nothing, the calls that would patch
 * return EBUSY, and once the thread is gone the next call converts.
 */
static notrace void *blocked_site_spinner(void *arg)
{
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	return site_spinner(arg);
}

static notrace uint32_t mov_slot(const void *fn)
{
	return *(volatile uint32_t *)(tc_site(fn) - 4);
}

Test(sites, conversion_refused_while_a_thread_cannot_be_stopped)
{
	struct usft_stats st = { .sz = sizeof(st) };
	static struct tc_counter c;
	pthread_t t;

	cr_assert_eq(pthread_create(&t, NULL, blocked_site_spinner, NULL), 0);
	while (__atomic_load_n(&spin_calls, __ATOMIC_ACQUIRE) < 1000)
		sched_yield();
	usft_init();
	tc_counter_init(&c, 0);
	cr_assert_eq(tc_set_filter(&c.ops, "cf_site_f1", 1), 0);
	cr_assert_eq(register_ftrace_function(&c.ops), -EBUSY);
	cr_assert_eq(mov_slot(cf_site_f1), 0xd503201fU, "the first NOP changed under the thread");
	cr_assert_eq(usft_stat(&st), 0);
	cr_assert_eq(st.nr_stop_machine, 0);
	cr_assert_geq(st.nr_nop_conversions_refused, 1);
	__atomic_store_n(&spin_stop, 1, __ATOMIC_RELEASE);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(spin_wrong, 0, "%ld wrong results", spin_wrong);
	/* nobody left to stop: converted and patched */
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	cr_assert_eq(mov_slot(cf_site_f1), 0xaa1e03e9U, "MOV X9, X30");
	cf_site_f1(1);
	cr_assert_gt(tc_count(&c), 0);
	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	expect_all_nop5();
}
#endif

Test(sites, one_ops_then_shared_then_back)
{
	static struct tc_counter a, b;
	unsigned long ta, tshared, tb;

	cr_assert_eq(usft_init(), 0);
	tc_counter_init(&a, 0);
	tc_counter_init(&b, 0);
	filter(&a.ops, "cf_site_f1");
	filter(&b.ops, "cf_site_f1");

	cr_assert_eq(register_ftrace_function(&a.ops), 0);
	expect_call(cf_site_f1);
	expect_nop5(cf_site_f2);
	expect_idle_untouched();
	ta = tc_call_target(cf_site_f1);
	cf_site_f1(0);
	cr_assert_eq(tc_count(&a), 1);

	cr_assert_eq(register_ftrace_function(&b.ops), 0);
	expect_call(cf_site_f1);
	expect_idle_untouched();
	tshared = tc_call_target(cf_site_f1);
	if (ops_trampolines_on())
		cr_assert_neq(tshared, ta,
			      "two ops on one site still call the first ops' trampoline");
	cf_site_f1(0);
	cr_assert_eq(tc_count(&a), 2);
	cr_assert_eq(tc_count(&b), 1);

	cr_assert_eq(unregister_ftrace_function(&a.ops), 0);
	expect_call(cf_site_f1);
	expect_idle_untouched();
	tb = tc_call_target(cf_site_f1);
	if (ops_trampolines_on())
		cr_assert_neq(tb, tshared, "sole remaining ops not moved to its trampoline");
	cf_site_f1(0);
	cr_assert_eq(tc_count(&a), 2, "unregistered ops still called");
	cr_assert_eq(tc_count(&b), 2);

	cr_assert_eq(unregister_ftrace_function(&b.ops), 0);
	expect_all_nop5();
	cf_site_f1(0);
	cr_assert_eq(tc_count(&a), 2);
	cr_assert_eq(tc_count(&b), 2);
}

Test(sites, first_ops_returns_to_its_own_target)
{
	static struct tc_counter a, b;
	unsigned long ta;

	tc_counter_init(&a, 0);
	tc_counter_init(&b, 0);
	filter(&a.ops, "cf_site_f1");
	filter(&b.ops, "cf_site_f1");
	cr_assert_eq(register_ftrace_function(&a.ops), 0);
	ta = tc_call_target(cf_site_f1);
	cr_assert_neq(ta, 0);
	cr_assert_eq(register_ftrace_function(&b.ops), 0);
	cr_assert_eq(unregister_ftrace_function(&b.ops), 0);
	expect_call(cf_site_f1);
	cr_assert_eq(tc_call_target(cf_site_f1), ta,
		     "site did not return to the single-ops target");
	cf_site_f1(0);
	cr_assert_eq(tc_count(&a), 1);
	cr_assert_eq(tc_count(&b), 0);
	cr_assert_eq(unregister_ftrace_function(&a.ops), 0);
	expect_all_nop5();
}

Test(sites, different_ops_on_different_sites)
{
	static struct tc_counter a, b;

	tc_counter_init(&a, 0);
	tc_counter_init(&b, 0);
	filter(&a.ops, "cf_site_f1");
	filter(&b.ops, "cf_site_f2");
	cr_assert_eq(register_ftrace_function(&a.ops), 0);
	cr_assert_eq(register_ftrace_function(&b.ops), 0);
	expect_call(cf_site_f1);
	expect_call(cf_site_f2);
	expect_nop5(cf_site_f3);
	if (ops_trampolines_on())
		cr_assert_neq(tc_call_target(cf_site_f1), tc_call_target(cf_site_f2),
			      "two single-ops sites share a target with ops_trampolines on");
	cf_site_f1(0);
	cf_site_f2(0);
	cf_site_f2(0);
	cr_assert_eq(tc_count(&a), 1);
	cr_assert_eq(tc_count(&b), 2);
	cr_assert_eq(atomic_load(&a.last_ip), tc_site(cf_site_f1));
	cr_assert_eq(atomic_load(&b.last_ip), tc_site(cf_site_f2));
	cr_assert_eq(unregister_ftrace_function(&a.ops), 0);
	expect_nop5(cf_site_f1);
	expect_call(cf_site_f2);
	cr_assert_eq(unregister_ftrace_function(&b.ops), 0);
	expect_all_nop5();
}

/* The four orders of ftrace-direct.tc, with two plain ops A and B on f1. */
static void run_order(int reg_b_first, int unreg_b_first)
{
	static struct tc_counter a, b;
	struct tc_counter *first, *second, *un1, *un2;
	char what[64];

	snprintf(what, sizeof(what), "order reg %s, unreg %s", reg_b_first ? "BA" : "AB",
		 unreg_b_first ? "BA" : "AB");
	/* the same two static ops go through all four orders */
	if (!a.ops.func) {
		tc_counter_init(&a, 0);
		tc_counter_init(&b, FTRACE_OPS_FL_SAVE_REGS);
	}
	atomic_store(&a.count, 0);
	atomic_store(&b.count, 0);
	filter(&a.ops, "cf_site_f1 cf_site_f2");
	filter(&b.ops, "cf_site_f1 cf_site_f3");
	first = reg_b_first ? &b : &a;
	second = reg_b_first ? &a : &b;
	un1 = unreg_b_first ? &b : &a;
	un2 = unreg_b_first ? &a : &b;

	cr_assert_eq(register_ftrace_function(&first->ops), 0, "%s", what);
	cr_assert_eq(register_ftrace_function(&second->ops), 0, "%s", what);
	expect_call(cf_site_f1);
	expect_call(cf_site_f2);
	expect_call(cf_site_f3);
	expect_nop5(cf_site_f4);
	expect_idle_untouched();
	cf_site_f1(0);
	cf_site_f2(0);
	cf_site_f3(0);
	cr_assert_eq(tc_count(&a), 2, "%s", what);
	cr_assert_eq(tc_count(&b), 2, "%s", what);
	cr_assert_eq(atomic_load(&b.no_regs), 0, "%s: SAVE_REGS ops got NULL regs", what);
	cr_assert_eq(atomic_load(&b.bad_regs_ip), 0, "%s: regs->ip != site+5", what);

	cr_assert_eq(unregister_ftrace_function(&un1->ops), 0, "%s", what);
	expect_call(cf_site_f1);
	if (un1 == &a) {
		expect_nop5(cf_site_f2);
		expect_call(cf_site_f3);
	} else {
		expect_call(cf_site_f2);
		expect_nop5(cf_site_f3);
	}
	expect_idle_untouched();
	cf_site_f1(0);
	cf_site_f2(0);
	cf_site_f3(0);
	cr_assert_eq(tc_count(un1), 2, "%s: removed ops still called", what);
	cr_assert_eq(tc_count(un2), 4, "%s", what);
	cr_assert_eq(atomic_load(&b.no_regs), 0, "%s", what);
	cr_assert_eq(atomic_load(&b.bad_regs_ip), 0, "%s", what);

	cr_assert_eq(unregister_ftrace_function(&un2->ops), 0, "%s", what);
	expect_all_nop5();
	cf_site_f1(0);
	cf_site_f2(0);
	cf_site_f3(0);
	cr_assert_eq(tc_count(&a) + tc_count(&b), 6, "%s", what);
	ftrace_free_filter(&a.ops);
	ftrace_free_filter(&b.ops);
}

Test(sites, two_ops_all_four_orders)
{
	run_order(0, 0);
	run_order(0, 1);
	run_order(1, 0);
	run_order(1, 1);
}

Test(sites, save_regs_ops_joining_a_plain_site_gets_regs)
{
	static struct tc_counter plain, regs;

	tc_counter_init(&plain, 0);
	tc_counter_init(&regs, FTRACE_OPS_FL_SAVE_REGS);
	filter(&plain.ops, "cf_site_f1");
	filter(&regs.ops, "cf_site_f1");
	cr_assert_eq(register_ftrace_function(&plain.ops), 0);
	cr_assert_eq(register_ftrace_function(&regs.ops), 0);
	for (int i = 0; i < 3; i++)
		cf_site_f1(i);
	cr_assert_eq(tc_count(&plain), 3);
	cr_assert_eq(tc_count(&regs), 3);
	cr_assert_eq(atomic_load(&regs.no_regs), 0, "SAVE_REGS ops got NULL regs on a shared site");
	cr_assert_eq(atomic_load(&regs.bad_regs_ip), 0);
	cr_assert_eq(unregister_ftrace_function(&plain.ops), 0);
	cf_site_f1(0);
	cr_assert_eq(tc_count(&regs), 4);
	cr_assert_eq(atomic_load(&regs.no_regs), 0);
	cr_assert_eq(unregister_ftrace_function(&regs.ops), 0);
	expect_all_nop5();
}

Test(sites, many_ops_on_one_site)
{
	static struct tc_counter c[8];
	static const int order[8] = { 3, 0, 7, 5, 1, 6, 2, 4 };
	int live = 8;

	for (int i = 0; i < 8; i++) {
		tc_counter_init(&c[i], i % 3 == 0 ? FTRACE_OPS_FL_RECURSION :
				       i % 3 == 1 ? FTRACE_OPS_FL_SAVE_REGS : 0);
		filter(&c[i].ops, "cf_site_f4");
		cr_assert_eq(register_ftrace_function(&c[i].ops), 0, "ops %d", i);
	}
	expect_call(cf_site_f4);
	cf_site_f4(0);
	for (int i = 0; i < 8; i++)
		cr_assert_eq(tc_count(&c[i]), 1, "ops %d called %ld times", i, tc_count(&c[i]));
	for (int k = 0; k < 8; k++) {
		int gone = order[k];
		long before[8];

		cr_assert_eq(unregister_ftrace_function(&c[gone].ops), 0);
		live--;
		if (live)
			expect_call(cf_site_f4);
		else
			expect_nop5(cf_site_f4);
		for (int i = 0; i < 8; i++)
			before[i] = tc_count(&c[i]);
		cf_site_f4(0);
		for (int i = 0; i < 8; i++) {
			bool reg = c[i].ops.flags & FTRACE_OPS_FL_ENABLED;

			cr_assert_eq(tc_count(&c[i]), before[i] + (reg ? 1 : 0),
				     "after removing %d: ops %d", gone, i);
		}
	}
	expect_all_nop5();
}

Test(usft_stat, counters_track_sites_and_ops)
{
	static struct tc_counter a, b;
	struct usft_stats st0, st;

	cr_assert_eq(usft_init(), 0);
	st0 = tc_stat();
	cr_assert_gt(st0.nr_sites, (unsigned long)NR_ALL, "nr_sites %lu", st0.nr_sites);
	cr_assert_geq(st0.nr_objects, 1);
	cr_assert_eq(st0.nr_enabled, 0);
	cr_assert_eq(st0.nr_ops, 0);
	cr_assert_eq(st0.disabled, 0);

	tc_counter_init(&a, 0);
	tc_counter_init(&b, 0);
	filter(&a.ops, "cf_site_f1 cf_site_f2 cf_site_f3");
	filter(&b.ops, "cf_site_f3 cf_site_f4");
	cr_assert_eq(register_ftrace_function(&a.ops), 0);
	st = tc_stat();
	cr_assert_eq(st.nr_enabled, 3);
	cr_assert_eq(st.nr_ops, 1);
	cr_assert_gt(st.nr_updates, st0.nr_updates);
	cr_assert_geq(st.nr_sites_written, st0.nr_sites_written + 3);
	cr_assert_eq(st.nr_sites, st0.nr_sites);

	cr_assert_eq(register_ftrace_function(&b.ops), 0);
	st = tc_stat();
	cr_assert_eq(st.nr_enabled, 4);
	cr_assert_eq(st.nr_ops, 2);

	cr_assert_eq(unregister_ftrace_function(&a.ops), 0);
	st = tc_stat();
	cr_assert_eq(st.nr_enabled, 2);
	cr_assert_eq(st.nr_ops, 1);
	cr_assert_eq(unregister_ftrace_function(&b.ops), 0);
	st = tc_stat();
	cr_assert_eq(st.nr_enabled, 0);
	cr_assert_eq(st.nr_ops, 0);
	cr_assert_eq(st.disabled, 0);
}

Test(usft_stat, every_function_ops_enables_every_site)
{
	static struct tc_counter all;
	struct usft_stats st;

	tc_counter_init(&all, 0);
	cr_assert_eq(register_ftrace_function(&all.ops), 0);
	for (int i = 0; i < NR_ALL; i++)
		cr_assert(tc_is_call((const void *)all_funcs[i]), "%s", all_names[i]);
	st = tc_stat();
	cr_assert_gt(st.nr_enabled, (unsigned long)NR_ALL);
	cr_assert_leq(st.nr_enabled, st.nr_sites);
	cf_site_idle1(0);
	cr_assert_geq(tc_count(&all), 1);
	cr_assert_eq(unregister_ftrace_function(&all.ops), 0);
	expect_all_nop5();
	cr_assert_eq(tc_stat().nr_enabled, 0);
}

Test(usft_stat, rejects_bad_size)
{
	struct usft_stats st;

	memset(&st, 0, sizeof(st));
	st.sz = 3;
	errno = 0;
	cr_assert_eq(usft_stat(&st), -EINVAL);
	cr_assert_eq(errno, EINVAL);
}

/* a newer caller's larger struct: served while its tail is zero (OPTS_VALID) */
Test(usft_stat, larger_struct_needs_zero_tail)
{
	struct {
		struct usft_stats st;
		unsigned long newer;
	} big;

	cr_assert_eq(usft_init(), 0);
	memset(&big, 0, sizeof(big));
	big.st.sz = sizeof(big);
	cr_assert_eq(usft_stat(&big.st), 0);
	cr_assert_gt(big.st.nr_sites, 0);
	cr_assert_eq(big.newer, 0, "the tail is left alone");
	memset(&big, 0, sizeof(big));
	big.st.sz = sizeof(big);
	big.newer = 1;
	errno = 0;
	cr_assert_eq(usft_stat(&big.st), -EINVAL);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(big.st.nr_sites, 0, "nothing filled in on refusal");
}
