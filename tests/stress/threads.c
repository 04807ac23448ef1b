// SPDX-License-Identifier: MIT
/*
 * Threads calling traced functions while the main thread registers,
 * unregisters and re-filters ops.  Every call must return the right value,
 * every callback must see a sane (ip, op, args) triple, all sites end as
 * nop5, and once unregister_ftrace_function() has returned its callback
 * never runs again.  Duration: USFT_STRESS_SECONDS (default 3), and at least
 * MIN_CYCLES register/unregister cycles whatever the duration.
 */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_common.h"

#define NR_THREADS 4
#define MIN_CYCLES 300
#define TAG 0x5a5aUL
#define TAGGED(i) ((long)((TAG << 32) | ((unsigned long)(i) & 0xffffffUL)))

TRACEE long cf_st_f0(long x)
{
	TRACEE_BODY();
	return x * 3 + 1;
}

TRACEE long cf_st_f1(long x)
{
	TRACEE_BODY();
	return x * 5 + 2;
}

TRACEE long cf_st_f2(long x)
{
	TRACEE_BODY();
	return x * 7 + 3;
}

TRACEE long cf_st_f3(long x)
{
	TRACEE_BODY();
	return x * 11 + 4;
}

static const tc_fn_t funcs[] = { cf_st_f0, cf_st_f1, cf_st_f2, cf_st_f3 };
static const long mult[] = { 3, 5, 7, 11 };
#define NR_FUNCS 4

static unsigned long sites[NR_FUNCS];

/* patterns the main thread cycles through (reset=1) */
static const char *const patterns[] = {
	"cf_st_f0", "cf_st_f1 cf_st_f2", "cf_st_*", "cf_st_f3", "cf_st_f[02]",
};

#define LIVE 0x11ce11ceUL
#define DEAD 0xdeadbeefUL

struct checked_ops {
	struct ftrace_ops ops;
	_Atomic unsigned long magic;	/* DEAD once unregister returned */
	atomic_long count;
	atomic_long bad_ip;
	atomic_long bad_arg;
	atomic_long bad_regs;
	atomic_long started_dead;	/* entered after unregister returned */
	atomic_long finished_dead;	/* entered before, still running after it returned */
};

static notrace bool known_site(unsigned long ip)
{
	for (int i = 0; i < NR_FUNCS; i++)
		if (sites[i] == ip)
			return true;
	return false;
}

static notrace void checked_func(unsigned long ip, unsigned long pip,
				 struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct checked_ops *c = container_of(op, struct checked_ops, ops);
	bool dead_at_entry = atomic_load(&c->magic) != LIVE;

	if (dead_at_entry)
		atomic_fetch_add(&c->started_dead, 1);
	if (!known_site(ip))
		atomic_fetch_add(&c->bad_ip, 1);
	if ((ftrace_regs_get_argument(fregs, 0) >> 32) != TAG)
		atomic_fetch_add(&c->bad_arg, 1);
	if (op->flags & FTRACE_OPS_FL_SAVE_REGS) {
#if defined(__x86_64__)
		struct pt_regs *regs = ftrace_get_regs(fregs);

		if (!regs || regs->ip != ip + TC_SITE_SIZE || (regs->di >> 32) != TAG)
			atomic_fetch_add(&c->bad_regs, 1);
#else	/* arm64: WITH_ARGS only, no pt_regs */
		if (ftrace_regs_get_instruction_pointer(fregs) != ip + TC_SITE_SIZE)
			atomic_fetch_add(&c->bad_regs, 1);
#endif
	}
	atomic_fetch_add(&c->count, 1);
	if (!dead_at_entry && atomic_load(&c->magic) != LIVE)
		atomic_fetch_add(&c->finished_dead, 1);
}

/* A fresh ops, or a retired DYNAMIC one (as if freed and allocated again). */
static notrace void checked_init(struct checked_ops *c, unsigned long flags)
{
	memset(c, 0, sizeof(*c));
	c->ops.func = checked_func;
	c->ops.flags = flags;
	atomic_store(&c->magic, DEAD);
}

static void checked_register(struct checked_ops *c)
{
	int r;

	atomic_store(&c->magic, LIVE);
	r = register_ftrace_function(&c->ops);
	cr_assert_eq(r, 0, "register = %d", r);
}

static void checked_unregister(struct checked_ops *c)
{
	int r = unregister_ftrace_function(&c->ops);

	cr_assert_eq(r, 0, "unregister = %d", r);
	atomic_store(&c->magic, DEAD);
}

static void expect_clean(struct checked_ops *c, const char *what)
{
	cr_assert_eq(atomic_load(&c->bad_ip), 0, "%s: callback with a foreign ip", what);
	cr_assert_eq(atomic_load(&c->bad_arg), 0, "%s: callback saw a wrong argument", what);
	cr_assert_eq(atomic_load(&c->bad_regs), 0, "%s: bad regs in a SAVE_REGS callback", what);
	cr_assert(atomic_load(&c->started_dead) == 0 && atomic_load(&c->finished_dead) == 0,
		  "%s: callback ran after unregister returned: %ld started after it, "
		  "%ld were still running when it returned", what,
		  atomic_load(&c->started_dead), atomic_load(&c->finished_dead));
}

/* Worker: call every traced function, check every result. */
static void caller(struct tc_pool *p, int idx, void *arg)
{
	unsigned long i = (unsigned long)idx << 20;

	while (!tc_pool_should_stop(p)) {
		for (int k = 0; k < NR_FUNCS; k++) {
			long x = TAGGED(i + k);

			if (funcs[k](x) != x * mult[k] + k + 1)
				atomic_fetch_add(&p->errors, 1);
		}
		i++;
		atomic_fetch_add_explicit(&p->iters[idx], 1, memory_order_relaxed);
	}
}

static void setup(void)
{
	cr_assert_eq(usft_init(), 0);
	for (int i = 0; i < NR_FUNCS; i++) {
		sites[i] = tc_site((const void *)funcs[i]);
		cr_assert_neq(sites[i], 0);
	}
}

static void expect_all_nop5(void)
{
	for (int i = 0; i < NR_FUNCS; i++)
		cr_assert(tc_is_nop5((const void *)funcs[i]), "cf_st_f%d not nop5 at the end", i);
}

/* After the last unregister the counters must not move while threads run. */
static void expect_frozen(struct tc_pool *p, struct checked_ops *const *cs, int n)
{
	long before[64];

	cr_assert_leq(n, 64);

	for (int i = 0; i < n; i++)
		before[i] = atomic_load(&cs[i]->count);
	tc_pool_wait_iters(p, 20000);
	for (int i = 0; i < n; i++)
		cr_assert_eq(atomic_load(&cs[i]->count), before[i],
			     "ops %d: callback ran after its final unregister", i);
}

static void cycle_one_ops(unsigned long base_flags, const char *what)
{
	static struct checked_ops c;
	struct checked_ops *cs[1] = { &c };
	struct tc_pool pool;
	double deadline;
	long cycles = 0, own_calls = 0;

	setup();
	checked_init(&c, base_flags);
	cr_assert_eq(tc_pool_start(&pool, NR_THREADS, caller, NULL), 0);
	deadline = tc_now() + tc_stress_seconds();

	while (cycles < MIN_CYCLES || tc_now() < deadline) {
		const char *pat = patterns[cycles % TC_ARRAY_SIZE(patterns)];
		unsigned long flags = base_flags;

		if (cycles % 3 == 1)
			flags |= FTRACE_OPS_FL_RECURSION;
		tc_ops_set_attr(&c.ops, flags);
		cr_assert_eq(tc_set_filter(&c.ops, pat, 1), 0, "%s", pat);
		checked_register(&c);
		/* deterministic traced calls: every pattern selects one of them */
		for (int k = 0; k < NR_FUNCS; k++)
			funcs[k](TAGGED(cycles));
		own_calls++;
		if (cycles % 2) {
			/* change the filter of the live ops */
			const char *pat2 = patterns[(cycles + 2) % TC_ARRAY_SIZE(patterns)];

			cr_assert_eq(tc_set_filter(&c.ops, pat2, 1), 0, "%s", pat2);
			cr_assert_eq(tc_set_filter(&c.ops, "cf_st_f1", 0), 0);
		}
		checked_unregister(&c);
		cycles++;
	}

	expect_all_nop5();
	expect_frozen(&pool, cs, 1);
	tc_pool_stop(&pool);
	cr_assert_eq(atomic_load(&pool.errors), 0, "%s: wrong results in worker threads", what);
	cr_assert_geq(atomic_load(&c.count), own_calls,
		      "%s: callbacks lost: %ld callbacks for %ld cycles of main-thread calls", what,
		      atomic_load(&c.count), own_calls);
	expect_clean(&c, what);
	cr_assert_eq(tc_stat().nr_enabled, 0);
	cr_assert_eq(tc_stat().disabled, 0);
	cr_log_info("%s: %ld cycles, %ld callbacks", what, cycles, atomic_load(&c.count));
}

Test(stress, register_unregister_while_threads_call, .timeout = 300)
{
	cycle_one_ops(0, "plain");
}

Test(stress, save_regs_register_unregister_while_threads_call, .timeout = 300)
{
	cycle_one_ops(FTRACE_OPS_FL_SAVE_REGS, "save_regs");
}

Test(stress, two_ops_alternating, .timeout = 300)
{
	static struct checked_ops a, b;
	struct checked_ops *cs[2] = { &a, &b };
	struct tc_pool pool;
	double deadline;
	long cycles = 0;

	setup();
	checked_init(&a, 0);
	checked_init(&b, FTRACE_OPS_FL_SAVE_REGS);
	cr_assert_eq(tc_set_filter(&a.ops, "cf_st_f0 cf_st_f1 cf_st_f2", 1), 0);
	cr_assert_eq(tc_set_filter(&b.ops, "cf_st_f1 cf_st_f2 cf_st_f3", 1), 0);
	cr_assert_eq(tc_pool_start(&pool, NR_THREADS, caller, NULL), 0);
	deadline = tc_now() + tc_stress_seconds();

	/* sites go 1 -> 2 -> 1 -> 2 -> 1 -> 0 users in each cycle */
	while (cycles < MIN_CYCLES || tc_now() < deadline) {
		long ca, cb;

		checked_register(&a);
		checked_register(&b);
		ca = atomic_load(&a.count);
		cb = atomic_load(&b.count);
		cf_st_f1(TAGGED(cycles));	/* always selected by a */
		cf_st_f3(TAGGED(cycles));	/* always selected by b */
		cr_assert_geq(atomic_load(&a.count), ca + 1);
		cr_assert_geq(atomic_load(&b.count), cb + 1);
		checked_unregister(&a);
		checked_register(&a);
		checked_unregister(&b);
		if (cycles % 4 == 0)
			cr_assert_eq(tc_set_filter(&b.ops, "cf_st_f3", 1), 0);
		else if (cycles % 4 == 2)
			cr_assert_eq(tc_set_filter(&b.ops, "cf_st_f1 cf_st_f2 cf_st_f3", 1), 0);
		checked_unregister(&a);
		cycles++;
	}

	expect_all_nop5();
	expect_frozen(&pool, cs, 2);
	tc_pool_stop(&pool);
	cr_assert_eq(atomic_load(&pool.errors), 0, "wrong results in worker threads");
	expect_clean(&a, "a");
	expect_clean(&b, "b");
	cr_assert_eq(tc_stat().nr_enabled, 0);
	cr_log_info("two ops: %ld cycles", cycles);
}

/* Heap ops that are retired (marked dead, as if freed) right after unregister. */
Test(stress, dynamic_ops_never_called_after_unregister, .timeout = 300)
{
	enum { POOL = 64 };
	struct checked_ops *ops = calloc(POOL, sizeof(*ops));
	struct checked_ops *live[POOL];
	struct tc_pool pool;
	double deadline;
	long cycles = 0;

	cr_assert_not_null(ops);
	setup();
	cr_assert_eq(tc_pool_start(&pool, NR_THREADS, caller, NULL), 0);
	deadline = tc_now() + tc_stress_seconds();

	while (cycles < MIN_CYCLES || tc_now() < deadline) {
		struct checked_ops *c = &ops[cycles % POOL];

		checked_init(c, cycles % 2 ? FTRACE_OPS_FL_SAVE_REGS : 0);
		cr_assert_eq(tc_set_filter(&c->ops, patterns[cycles % TC_ARRAY_SIZE(patterns)], 1), 0);
		checked_register(c);
		cr_assert(c->ops.flags & FTRACE_OPS_FL_DYNAMIC);
		checked_unregister(c);
		ftrace_free_filter(&c->ops);
		cycles++;
	}

	expect_all_nop5();
	for (int i = 0; i < POOL; i++)
		live[i] = &ops[i];
	expect_frozen(&pool, live, POOL);
	tc_pool_stop(&pool);
	cr_assert_eq(atomic_load(&pool.errors), 0, "wrong results in worker threads");
	for (int i = 0; i < POOL; i++)
		expect_clean(&ops[i], "dynamic");
	free(ops);
	cr_log_info("dynamic: %ld cycles", cycles);
}
