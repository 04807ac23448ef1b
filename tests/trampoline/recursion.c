// SPDX-License-Identifier: MIT
/*
 * Callback recursion (kernel: __bpf_prog_enter_recur(): a prog skipped by its
 * recursion check bumps its miss count; prog_tests/recursion; usft/
 * trampoline.h usft_tramp_link_misses()):
 *  - a callback that calls its own traced function: the outer call's
 *    callback runs once, the nested call runs the original (right result)
 *    but none of its callbacks, each skipped callback counts as a miss on
 *    its link
 *  - per thread: concurrent callers are not misses
 *  - a function that recurses by itself (not from a callback) runs its
 *    callbacks at every level, no misses
 */
#include "tramp_common.h"

TRACEE long tr_rec_f(long x)
{
	TRACEE_BODY();
	return x * 2 + 1;
}

TRACEE long tr_rec_g(long x)
{
	TRACEE_BODY();
	return x + 100;
}

TRACEE unsigned long tr_rec_fact(unsigned long n)
{
	unsigned long r;

	TRACEE_BODY();
	if (n <= 1)
		return 1;
	r = tr_rec_fact(n - 1);
	asm volatile("" : "+r"(r));	/* no tail-recursion-to-loop */
	return n * r;
}

struct rec_cb {
	atomic_long hits;
	atomic_long nested_bad;		/* a nested call returned a wrong value */
	atomic_long bad_ctx;
	int nested_calls;		/* calls of the traced function per callback */
	int kind;
	void *target;			/* what the callback calls */
	long (*fn)(long);
	unsigned long retval;		/* fmod_ret */
};

static long f_expect(long x)
{
	return x * 2 + 1;
}

static notrace unsigned long rec_prog(const unsigned long *ctx, void *cookie)
{
	struct rec_cb *c = cookie;
	long x = (long)ctx[0];

	atomic_fetch_add(&c->hits, 1);
	if (c->kind == USFT_TRAMP_FEXIT && (long)ctx[1] != f_expect(x))
		atomic_fetch_add(&c->bad_ctx, 1);
	if (c->kind == USFT_TRAMP_FMODRET && ctx[1] != 0)
		atomic_fetch_add(&c->bad_ctx, 1);
	for (int i = 0; i < c->nested_calls; i++) {
		long y = x + 1000 + i;

		if (c->fn(y) != (c->fn == tr_rec_g ? y + 100 : f_expect(y)))
			atomic_fetch_add(&c->nested_bad, 1);
	}
	return c->retval;
}

static void self_recursing(enum usft_tramp_kind kind, int nested, int mode, unsigned long retval)
{
	struct rec_cb c = { .nested_calls = nested, .kind = kind, .fn = tr_rec_f,
			    .retval = retval };
	struct usft_tramp_link *l;
	const long N = 100;

	cr_assert_eq(usft_init(), 0);
	l = tt_attach(tr_rec_f, kind, rec_prog, &c, -1, mode);
	for (long i = 0; i < N; i++) {
		long r = tr_rec_f(i);
		long want = retval ? (long)retval : f_expect(i);

		cr_assert_eq(r, want, "tr_rec_f(%ld) = %ld, want %ld", i, r, want);
	}
	cr_assert_eq(atomic_load(&c.hits), N, "callback ran %ld times for %ld outer calls",
		     atomic_load(&c.hits), N);
	cr_assert_eq(atomic_load(&c.nested_bad), 0, "nested calls returned wrong values");
	cr_assert_eq(atomic_load(&c.bad_ctx), 0);
	cr_assert_eq(usft_tramp_link_misses(l), (unsigned long)(N * nested),
		     "misses %lu, want %ld (one per nested call)", usft_tramp_link_misses(l),
		     N * nested);
	tt_detach(l);
	expect_site(tr_rec_f, TT_NOP5);
}

Test(recursion, fentry_calls_its_function)
{
	self_recursing(USFT_TRAMP_FENTRY, 1, 0, 0);
}

Test(recursion, fentry_calls_its_function_three_times)
{
	self_recursing(USFT_TRAMP_FENTRY, 3, 0, 0);
}

Test(recursion, fexit_calls_its_function_jmp)
{
	self_recursing(USFT_TRAMP_FEXIT, 1, USFT_TRAMP_MODE_AUTO, 0);
}

Test(recursion, fexit_calls_its_function_call)
{
	self_recursing(USFT_TRAMP_FEXIT, 2, USFT_TRAMP_MODE_CALL, 0);
}

Test(recursion, fmod_ret_calls_its_function)
{
	self_recursing(USFT_TRAMP_FMODRET, 1, 0, 0);
}

/* the outer call is skipped, the nested ones (from the callback) are not */
Test(recursion, fmod_ret_skipping_calls_its_function)
{
	self_recursing(USFT_TRAMP_FMODRET, 1, 0, (unsigned long)-7L);
}

Test(recursion, fmod_ret_skipping_calls_its_function_call_mode)
{
	self_recursing(USFT_TRAMP_FMODRET, 2, USFT_TRAMP_MODE_CALL, 12345);
}

/*
 * A recursing fentry plus plain fexit and fmod_ret links: the nested call
 * runs none of the callbacks (each counts a miss), the outer call all.
 */
static void all_kinds(int mode)
{
	struct rec_cb a = { .nested_calls = 1, .kind = USFT_TRAMP_FENTRY, .fn = tr_rec_f };
	struct rec_cb b = { .kind = USFT_TRAMP_FEXIT, .fn = tr_rec_f };
	struct rec_cb c = { .kind = USFT_TRAMP_FMODRET, .fn = tr_rec_f };
	struct usft_tramp_link *la, *lb, *lc;
	const long N = 50;

	cr_assert_eq(usft_init(), 0);
	lb = tt_attach(tr_rec_f, USFT_TRAMP_FEXIT, rec_prog, &b, -1, mode);
	la = tt_attach(tr_rec_f, USFT_TRAMP_FENTRY, rec_prog, &a, -1, mode);
	lc = tt_attach(tr_rec_f, USFT_TRAMP_FMODRET, rec_prog, &c, -1, mode);
	for (long i = 0; i < N; i++)
		cr_assert_eq(tr_rec_f(i), f_expect(i));
	cr_assert_eq(atomic_load(&a.hits), N);
	cr_assert_eq(atomic_load(&b.hits), N, "fexit ran %ld times for %ld outer calls",
		     atomic_load(&b.hits), N);
	cr_assert_eq(atomic_load(&c.hits), N, "fmod_ret ran %ld times for %ld outer calls",
		     atomic_load(&c.hits), N);
	cr_assert_eq(atomic_load(&a.nested_bad), 0);
	cr_assert_eq(atomic_load(&b.bad_ctx) + atomic_load(&c.bad_ctx), 0);
	cr_assert_eq(usft_tramp_link_misses(la), N, "fentry misses %lu",
		     usft_tramp_link_misses(la));
	cr_assert_eq(usft_tramp_link_misses(lb), N, "fexit misses %lu",
		     usft_tramp_link_misses(lb));
	cr_assert_eq(usft_tramp_link_misses(lc), N, "fmod_ret misses %lu",
		     usft_tramp_link_misses(lc));
	tt_detach(la);
	/* no recursing callback left: no more misses, misses are kept */
	for (long i = 0; i < N; i++)
		cr_assert_eq(tr_rec_f(i), f_expect(i));
	cr_assert_eq(usft_tramp_link_misses(lb), N);
	cr_assert_eq(usft_tramp_link_misses(lc), N);
	cr_assert_eq(atomic_load(&b.hits), 2 * N);
	tt_detach(lb);
	tt_detach(lc);
	expect_site(tr_rec_f, TT_NOP5);
}

Test(recursion, all_kinds_jmp)
{
	all_kinds(USFT_TRAMP_MODE_AUTO);
}

Test(recursion, all_kinds_call)
{
	all_kinds(USFT_TRAMP_MODE_CALL);
}

/* misses are per thread: concurrent callers of the function are not misses */
static struct rec_cb mt_cb = { .nested_calls = 1, .kind = USFT_TRAMP_FENTRY, .fn = tr_rec_f };
#define MT_CALLS 20000

static void mt_worker(struct tc_pool *p, int idx, void *arg)
{
	for (long i = 0; i < MT_CALLS; i++) {
		long x = ((long)idx << 24) + i;

		if (tr_rec_f(x) != f_expect(x))
			atomic_fetch_add(&p->errors, 1);
		atomic_fetch_add_explicit(&p->iters[idx], 1, memory_order_relaxed);
	}
	while (!tc_pool_should_stop(p))
		sched_yield();
}

Test(recursion, per_thread)
{
	struct usft_tramp_link *l;
	struct tc_pool pool;

	cr_assert_eq(usft_init(), 0);
	l = tt_attach(tr_rec_f, USFT_TRAMP_FENTRY, rec_prog, &mt_cb, -1, 0);
	cr_assert_eq(tc_pool_start(&pool, 4, mt_worker, NULL), 0);
	for (;;) {
		unsigned long done = 0;

		for (int i = 0; i < 4; i++)
			done += atomic_load(&pool.iters[i]);
		if (done == 4UL * MT_CALLS)
			break;
		sched_yield();
	}
	tc_pool_stop(&pool);
	cr_assert_eq(atomic_load(&pool.errors), 0);
	cr_assert_eq(atomic_load(&mt_cb.nested_bad), 0);
	cr_assert_eq(atomic_load(&mt_cb.hits), 4L * MT_CALLS, "hits %ld",
		     atomic_load(&mt_cb.hits));
	cr_assert_eq(usft_tramp_link_misses(l), 4UL * MT_CALLS, "misses %lu",
		     usft_tramp_link_misses(l));
	tt_detach(l);
}

/* a plain link with no recursion never misses */
Test(recursion, no_misses_without_recursion)
{
	struct rec_cb c = { .kind = USFT_TRAMP_FEXIT, .fn = tr_rec_f };
	struct usft_tramp_link *l;

	cr_assert_eq(usft_init(), 0);
	l = tt_attach(tr_rec_f, USFT_TRAMP_FEXIT, rec_prog, &c, -1, 0);
	for (long i = 0; i < 1000; i++)
		cr_assert_eq(tr_rec_f(i), f_expect(i));
	cr_assert_eq(usft_tramp_link_misses(l), 0);
	cr_assert_eq(atomic_load(&c.hits), 1000);
	tt_detach(l);
}

/* the traced function recursing by itself: callbacks at every level */
static atomic_long fact_en, fact_ex, fact_ex_bad;

static notrace unsigned long fact(unsigned long n)
{
	return n <= 1 ? 1 : n * fact(n - 1);
}

static notrace unsigned long fact_entry(const unsigned long *ctx, void *cookie)
{
	atomic_fetch_add(&fact_en, 1);
	return 0;
}

static notrace unsigned long fact_exit(const unsigned long *ctx, void *cookie)
{
	if (ctx[1] != fact(ctx[0]))
		atomic_fetch_add(&fact_ex_bad, 1);
	atomic_fetch_add(&fact_ex, 1);
	return 0;
}

static void self_recursive_function(int mode, unsigned long depth)
{
	struct usft_tramp_link *a, *b;

	cr_assert_eq(usft_init(), 0);
	a = tt_attach(tr_rec_fact, USFT_TRAMP_FENTRY, fact_entry, NULL, -1, mode);
	b = tt_attach(tr_rec_fact, USFT_TRAMP_FEXIT, fact_exit, NULL, -1, mode);
	cr_assert_eq(tr_rec_fact(10), 3628800);
	cr_assert_eq(atomic_load(&fact_en), 10);
	cr_assert_eq(atomic_load(&fact_ex), 10);
	/* deeper than the per-thread in-original stack (wrapping products) */
	cr_assert_eq(tr_rec_fact(depth), fact(depth));
	cr_assert_eq(atomic_load(&fact_en), 10 + (long)depth);
	cr_assert_eq(atomic_load(&fact_ex), 10 + (long)depth);
	cr_assert_eq(atomic_load(&fact_ex_bad), 0);
	cr_assert_eq(usft_tramp_link_misses(a), 0);
	cr_assert_eq(usft_tramp_link_misses(b), 0);
	tt_detach(a);
	tt_detach(b);
	expect_site(tr_rec_fact, TT_NOP5);
	cr_assert_eq(tr_rec_fact(5), 120);
}

Test(recursion, self_recursive_function_jmp)
{
	self_recursive_function(USFT_TRAMP_MODE_AUTO, 100);
}

Test(recursion, self_recursive_function_call)
{
	self_recursive_function(USFT_TRAMP_MODE_CALL, 100);
}

/*
 * A callback calling a different traced function that has its own link.
 * Not pinned by the API (the kernel's recursion check is per program; this
 * runtime's is one per-thread "in a callback" bit): only the results are
 * checked, the observed behaviour is logged.
 */
Test(recursion, callback_calls_other_traced_function)
{
	struct rec_cb a = { .nested_calls = 1, .kind = USFT_TRAMP_FENTRY, .fn = tr_rec_g };
	struct rec_cb g = { .kind = USFT_TRAMP_FENTRY, .fn = tr_rec_g };
	struct usft_tramp_link *la, *lg;

	cr_assert_eq(usft_init(), 0);
	la = tt_attach(tr_rec_f, USFT_TRAMP_FENTRY, rec_prog, &a, -1, 0);
	lg = tt_attach(tr_rec_g, USFT_TRAMP_FENTRY, rec_prog, &g, -1, 0);
	for (long i = 0; i < 10; i++)
		cr_assert_eq(tr_rec_f(i), f_expect(i));
	cr_assert_eq(atomic_load(&a.nested_bad), 0);
	cr_assert_eq(atomic_load(&a.hits), 10);
	cr_assert_eq(usft_tramp_link_misses(la), 0);
	cr_log_info("g's fentry from f's callback: %ld hits, %lu misses (10 calls)",
		    atomic_load(&g.hits), usft_tramp_link_misses(lg));
	cr_assert_eq(atomic_load(&g.hits) + (long)usft_tramp_link_misses(lg), 10);
	cr_assert_eq(tr_rec_g(1), 101);
	tt_detach(la);
	tt_detach(lg);
}
