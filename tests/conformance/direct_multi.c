// SPDX-License-Identifier: MIT
/*
 * One direct ops on many functions: register_ftrace_direct() with a
 * multi-function filter (ftrace-direct-multi, -multi-modify) and the
 * single-ops batch API update_ftrace_direct_add/mod/del, including 1,000
 * sites in one call each with one code-update pass per call, and all-or-
 * nothing validation.
 * Kernel: update_ftrace_direct_add/mod/del(), direct_functions
 * (kernel/trace/ftrace.c), samples/ftrace/ftrace-direct-multi.c.
 * Trampolines: direct_tramps.S.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test_common.h"

/* ---- trampolines (direct_tramps.S) and their C helpers ------------------ */

extern const char tramp_a[], tramp_b[], tramp_jmp[];
extern unsigned long direct_jmp_body;

#define TA ((unsigned long)tramp_a)
#define TB ((unsigned long)tramp_b)

/*
 * Per-site hit table: the helper identifies the function from the return
 * address (site = ret - 5) by binary search over sorted sites.
 */
#define MAX_TAB 1100
struct site_tab {
	int n;
	unsigned long site[MAX_TAB];	/* sorted */
	atomic_long a[MAX_TAB], b[MAX_TAB];
	atomic_long unknown;
};
static struct site_tab tab;
static atomic_long hits_a, hits_b;

void direct_hit_a(unsigned long arg0, unsigned long ret);
void direct_hit_b(unsigned long arg0, unsigned long ret);
void direct_hit_jmp(unsigned long arg0, unsigned long ret);

static notrace int tab_find(unsigned long site)
{
	int lo = 0, hi = tab.n;

	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (tab.site[mid] == site)
			return mid;
		if (tab.site[mid] < site)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static notrace void hit(bool is_a, unsigned long ret)
{
	int i = tab_find(ret - TC_SITE_SIZE);

	atomic_fetch_add(is_a ? &hits_a : &hits_b, 1);
	if (i < 0)
		atomic_fetch_add(&tab.unknown, 1);
	else
		atomic_fetch_add(is_a ? &tab.a[i] : &tab.b[i], 1);
}

notrace void direct_hit_a(unsigned long arg0, unsigned long ret) { hit(true, ret); }
notrace void direct_hit_b(unsigned long arg0, unsigned long ret) { hit(false, ret); }
notrace void direct_hit_jmp(unsigned long arg0, unsigned long ret) { }

static int cmp_ul(const void *x, const void *y)
{
	unsigned long a = *(const unsigned long *)x, b = *(const unsigned long *)y;

	return a < b ? -1 : a > b;
}

static void tab_set(const tc_fn_t *fns, int n)
{
	cr_assert_leq(n, MAX_TAB);
	memset(&tab, 0, sizeof(tab));
	for (int i = 0; i < n; i++) {
		tab.site[i] = tc_site((const void *)fns[i]);
		cr_assert_neq(tab.site[i], 0, "function %d has no site", i);
	}
	qsort(tab.site, n, sizeof(tab.site[0]), cmp_ul);
	tab.n = n;
}

static void tab_reset(void)
{
	for (int i = 0; i < tab.n; i++) {
		atomic_store(&tab.a[i], 0);
		atomic_store(&tab.b[i], 0);
	}
	atomic_store(&tab.unknown, 0);
	atomic_store(&hits_a, 0);
	atomic_store(&hits_b, 0);
}

static long tab_a(const void *fn)
{
	int i = tab_find(tc_site(fn));

	cr_assert_geq(i, 0);
	return atomic_load(&tab.a[i]);
}

static long tab_b(const void *fn)
{
	int i = tab_find(tc_site(fn));

	cr_assert_geq(i, 0);
	return atomic_load(&tab.b[i]);
}

/* ---- traced functions -------------------------------------------------- */

#define DEF(name, k)                     \
	TRACEE long name(long x)         \
	{                                \
		TRACEE_BODY();           \
		return x * (k) + 5;      \
	}

DEF(mu_f1, 3)
DEF(mu_f2, 5)
DEF(mu_f3, 7)
DEF(mu_b0, 11)
DEF(mu_b1, 13)
DEF(mu_b2, 17)
DEF(mu_b3, 19)
DEF(mu_b4, 23)
DEF(mu_b5, 29)
DEF(mu_b6, 31)
DEF(mu_b7, 37)

static const tc_fn_t small_fns[] = {
	mu_f1, mu_f2, mu_f3, mu_b0, mu_b1, mu_b2, mu_b3, mu_b4, mu_b5, mu_b6, mu_b7,
};
static const long small_k[] = { 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37 };
#define NR_SMALL ((int)TC_ARRAY_SIZE(small_fns))
static const tc_fn_t batch_fns[] = { mu_b0, mu_b1, mu_b2, mu_b3, mu_b4, mu_b5, mu_b6, mu_b7 };
#define NR_BATCH ((int)TC_ARRAY_SIZE(batch_fns))

/* 1,000 functions many_000 .. many_999: x * 3 + their number */
#define MANY_DEF(a, b, c)                                                      \
	TRACEE long many_##a##b##c(long x)                                     \
	{                                                                      \
		TRACEE_BODY();                                                 \
		return x * 3 + ((a) * 100 + (b) * 10 + (c));                   \
	}
#define MANY_ADDR(a, b, c) many_##a##b##c,
#define MANY10(M, a, b) M(a, b, 0) M(a, b, 1) M(a, b, 2) M(a, b, 3) M(a, b, 4) \
			M(a, b, 5) M(a, b, 6) M(a, b, 7) M(a, b, 8) M(a, b, 9)
#define MANY100(M, a) MANY10(M, a, 0) MANY10(M, a, 1) MANY10(M, a, 2)         \
		      MANY10(M, a, 3) MANY10(M, a, 4) MANY10(M, a, 5)         \
		      MANY10(M, a, 6) MANY10(M, a, 7) MANY10(M, a, 8)         \
		      MANY10(M, a, 9)
#define MANY1000(M) MANY100(M, 0) MANY100(M, 1) MANY100(M, 2) MANY100(M, 3)   \
		    MANY100(M, 4) MANY100(M, 5) MANY100(M, 6) MANY100(M, 7)   \
		    MANY100(M, 8) MANY100(M, 9)

MANY1000(MANY_DEF)
static const tc_fn_t many[] = { MANY1000(MANY_ADDR) };
#define NR_MANY ((int)TC_ARRAY_SIZE(many))

/* ---- helpers --------------------------------------------------------------- */

#define expect_direct(fn, tramp)                                               \
	do {                                                                   \
		expect_call(fn);                                               \
		cr_assert_eq(tc_call_target((const void *)(fn)), (tramp),      \
			     "site of %s calls %#lx, not %#lx", #fn,           \
			     tc_call_target((const void *)(fn)),               \
			     (unsigned long)(tramp));                          \
	} while (0)

#define expect_err(call, e)                                                    \
	do {                                                                   \
		errno = 0;                                                     \
		int _r = (call);                                               \
		cr_assert_eq(_r, (e), "%s = %d, expected %d", #call, _r, (e)); \
		cr_assert_eq(errno, -(e), "%s: errno %d", #call, errno);       \
	} while (0)

static void filter_ip(struct ftrace_ops *ops, const void *fn)
{
	cr_assert_eq(ftrace_set_filter_ip(ops, (unsigned long)fn, 0, 0), 0);
}

static struct ftrace_hash *new_hash(void)
{
	struct ftrace_hash *h = alloc_ftrace_hash(10);

	cr_assert_not_null(h);
	return h;
}

static void hash_add(struct ftrace_hash *h, const void *fn, unsigned long direct)
{
	cr_assert_not_null(add_ftrace_hash_entry_direct(h, tc_site(fn), direct));
}

/* call every small function once with argument @x, check the results */
static void call_small(long x)
{
	for (int i = 0; i < NR_SMALL; i++)
		cr_assert_eq(small_fns[i](x), x * small_k[i] + 5, "small function %d", i);
}

/* bytes of every small function: target (0 = nop5) */
static void expect_small(const unsigned long want[NR_SMALL])
{
	for (int i = 0; i < NR_SMALL; i++) {
		if (!want[i])
			cr_assert(tc_is_nop5((const void *)small_fns[i]),
				  "small function %d is not nop5", i);
		else
			cr_assert_eq(tc_call_target((const void *)small_fns[i]), want[i],
				     "small function %d calls %#lx, want %#lx", i,
				     tc_call_target((const void *)small_fns[i]), want[i]);
	}
}

/* ---- ftrace-direct-multi / -multi-modify ----------------------------------- */

Test(direct_multi, one_ops_two_functions)
{
	static struct ftrace_ops d;

	cr_assert_eq(usft_init(), 0);
	tab_set(small_fns, NR_SMALL);
	filter_ip(&d, mu_f1);
	filter_ip(&d, mu_f2);
	cr_assert_eq(register_ftrace_direct(&d, TA), 0);
	expect_direct(mu_f1, TA);
	expect_direct(mu_f2, TA);
	expect_nop5(mu_f3);
	cr_assert_eq(tc_stat().nr_direct_in_range, 2);

	call_small(1);
	cr_assert_eq(tab_a(mu_f1), 1, "the helper did not see mu_f1 exactly once");
	cr_assert_eq(tab_a(mu_f2), 1);
	cr_assert_eq(tab_a(mu_f3), 0);
	cr_assert_eq(atomic_load(&hits_a), 2);
	cr_assert_eq(atomic_load(&tab.unknown), 0);

	/* multi-modify: both sites follow */
	cr_assert_eq(modify_ftrace_direct(&d, TB), 0);
	expect_direct(mu_f1, TB);
	expect_direct(mu_f2, TB);
	tab_reset();
	call_small(2);
	cr_assert_eq(tab_b(mu_f1), 1);
	cr_assert_eq(tab_b(mu_f2), 1);
	cr_assert_eq(atomic_load(&hits_a), 0);
	cr_assert_eq(atomic_load(&hits_b), 2);

	cr_assert_eq(unregister_ftrace_direct(&d, TB, true), 0);
	expect_nop5(mu_f1);
	expect_nop5(mu_f2);
	tab_reset();
	call_small(3);
	cr_assert_eq(atomic_load(&hits_a) + atomic_load(&hits_b), 0);
}

Test(direct_multi, one_function_shared_with_a_tracer)
{
	static struct ftrace_ops d;
	static struct tc_counter c;

	cr_assert_eq(usft_init(), 0);
	tab_set(small_fns, NR_SMALL);
	filter_ip(&d, mu_f1);
	filter_ip(&d, mu_f2);
	cr_assert_eq(register_ftrace_direct(&d, TA), 0);
	tc_counter_init(&c, 0);
	cr_assert_eq(tc_set_filter(&c.ops, "mu_f1", 1), 0);
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	expect_call(mu_f1);
	cr_assert_neq(tc_call_target(mu_f1), TA, "shared site still direct");
	expect_direct(mu_f2, TA);
	call_small(1);
	cr_assert_eq(tab_a(mu_f1), 1);
	cr_assert_eq(tab_a(mu_f2), 1);
	cr_assert_eq(tc_count(&c), 1);

	cr_assert_eq(modify_ftrace_direct(&d, TB), 0);
	cr_assert_neq(tc_call_target(mu_f1), TB);
	expect_direct(mu_f2, TB);
	tab_reset();
	call_small(2);
	cr_assert_eq(tab_b(mu_f1), 1);
	cr_assert_eq(tab_b(mu_f2), 1);
	cr_assert_eq(atomic_load(&hits_a), 0);
	cr_assert_eq(tc_count(&c), 2);

	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	expect_direct(mu_f1, TB);
	cr_assert_eq(unregister_ftrace_direct(&d, TB, true), 0);
	expect_nop5(mu_f1);
	expect_nop5(mu_f2);
	cr_assert_eq(tc_stat().nr_ops, 0);
}

/* ---- batch API on a few sites ------------------------------------------------ */

Test(update_ftrace_direct, add_mod_del_small)
{
	static struct ftrace_ops bops, other;
	struct ftrace_hash *h, *h2, *bad;
	unsigned long want[NR_SMALL] = { 0 };
	int i;

	cr_assert_eq(usft_init(), 0);
	tab_set(small_fns, NR_SMALL);

	/* empty / NULL hashes */
	h = new_hash();
	expect_err(update_ftrace_direct_add(&bops, h), -EINVAL);
	expect_err(update_ftrace_direct_add(&bops, NULL), -EINVAL);
	expect_err(update_ftrace_direct_del(&bops, h), -EINVAL);
	expect_err(update_ftrace_direct_mod(&bops, h, true), -EINVAL);
	cr_assert_not(bops.flags & FTRACE_OPS_FL_ENABLED);

	/* first add: b0..b3 -> a, b4..b5 -> b (per-site targets) */
	for (i = 0; i < 6; i++)
		hash_add(h, batch_fns[i], i < 4 ? TA : TB);
	cr_assert_eq(update_ftrace_direct_add(&bops, h), 0);
	free_ftrace_hash(h);
	cr_assert(bops.flags & FTRACE_OPS_FL_ENABLED);
	cr_assert_eq(bops.flags & (FTRACE_OPS_FL_DIRECT | FTRACE_OPS_FL_SAVE_REGS),
		     FTRACE_OPS_FL_DIRECT | FTRACE_OPS_FL_SAVE_REGS);
	for (i = 0; i < 6; i++)
		want[3 + i] = i < 4 ? TA : TB;
	expect_small(want);
	call_small(1);
	for (i = 0; i < 6; i++) {
		cr_assert_eq(tab_a(batch_fns[i]), i < 4 ? 1 : 0, "b%d", i);
		cr_assert_eq(tab_b(batch_fns[i]), i < 4 ? 0 : 1, "b%d", i);
	}
	cr_assert_eq(atomic_load(&tab.unknown), 0);

	/* an ip owned by another direct ops: the whole batch is refused */
	filter_ip(&other, mu_f1);
	cr_assert_eq(register_ftrace_direct(&other, TB), 0);
	want[0] = TB;
	h = new_hash();
	hash_add(h, mu_b6, TA);
	hash_add(h, mu_f1, TA);
	expect_err(update_ftrace_direct_add(&bops, h), -EINVAL);
	free_ftrace_hash(h);
	expect_small(want);
	/* ... and so is an ip this ops already has */
	h = new_hash();
	hash_add(h, mu_b6, TA);
	hash_add(h, mu_b0, TA);
	expect_err(update_ftrace_direct_add(&bops, h), -EINVAL);
	free_ftrace_hash(h);
	expect_small(want);

	/* second add (a hash move): b6, b7 */
	h = new_hash();
	hash_add(h, mu_b6, TA);
	hash_add(h, mu_b7, TB);
	cr_assert_eq(update_ftrace_direct_add(&bops, h), 0);
	free_ftrace_hash(h);
	want[3 + 6] = TA;
	want[3 + 7] = TB;
	expect_small(want);

	/* mod: b0 -> b, b7 -> a; an ip outside the ops is refused first */
	bad = new_hash();
	hash_add(bad, mu_b0, TB);
	hash_add(bad, mu_f3, TB);
	expect_err(update_ftrace_direct_mod(&bops, bad, true), -EINVAL);
	free_ftrace_hash(bad);
	expect_small(want);
	h2 = new_hash();
	hash_add(h2, mu_b0, TB);
	hash_add(h2, mu_b7, TA);
	cr_assert_eq(update_ftrace_direct_mod(&bops, h2, true), 0);
	free_ftrace_hash(h2);
	want[3 + 0] = TB;
	want[3 + 7] = TA;
	expect_small(want);
	tab_reset();
	call_small(2);
	cr_assert_eq(tab_b(mu_b0), 1);
	cr_assert_eq(tab_a(mu_b0), 0);
	cr_assert_eq(tab_a(mu_b7), 1);
	cr_assert_eq(tab_b(mu_f1), 1);	/* the other ops, untouched */
	cr_assert_eq(atomic_load(&hits_a) + atomic_load(&hits_b), NR_BATCH + 1);

	/* del with a wrong direct value: refused, nothing changes */
	bad = new_hash();
	hash_add(bad, mu_b1, TA);	/* right */
	hash_add(bad, mu_b2, TB);	/* b2 is on a */
	expect_err(update_ftrace_direct_del(&bops, bad), -EINVAL);
	free_ftrace_hash(bad);
	expect_small(want);
	/* del of an ip the ops does not have: refused */
	bad = new_hash();
	hash_add(bad, mu_f1, TB);
	expect_err(update_ftrace_direct_del(&bops, bad), -EINVAL);
	free_ftrace_hash(bad);
	expect_small(want);

	/* del a subset: b1, b2, b4 */
	h = new_hash();
	hash_add(h, mu_b1, TA);
	hash_add(h, mu_b2, TA);
	hash_add(h, mu_b4, TB);
	cr_assert_eq(update_ftrace_direct_del(&bops, h), 0);
	free_ftrace_hash(h);
	want[3 + 1] = want[3 + 2] = want[3 + 4] = 0;
	expect_small(want);
	cr_assert(bops.flags & FTRACE_OPS_FL_ENABLED);
	tab_reset();
	call_small(3);
	cr_assert_eq(tab_a(mu_b1) + tab_b(mu_b1) + tab_a(mu_b2) + tab_b(mu_b4), 0);
	cr_assert_eq(atomic_load(&hits_a) + atomic_load(&hits_b), NR_BATCH - 3 + 1);

	/* del the rest: the ops is unregistered */
	h = new_hash();
	hash_add(h, mu_b0, TB);
	hash_add(h, mu_b3, TA);
	hash_add(h, mu_b5, TB);
	hash_add(h, mu_b6, TA);
	hash_add(h, mu_b7, TA);
	cr_assert_eq(update_ftrace_direct_del(&bops, h), 0);
	cr_assert_not(bops.flags & FTRACE_OPS_FL_ENABLED, "ops still enabled with no sites");
	for (i = 0; i < NR_BATCH; i++)
		want[3 + i] = 0;
	expect_small(want);
	/* deleting again: the ops is gone */
	expect_err(update_ftrace_direct_del(&bops, h), -EINVAL);
	free_ftrace_hash(h);
	cr_assert_eq(tc_stat().nr_ops, 1);	/* only 'other' */

	/* the emptied ops can start again (first-add path) */
	h = new_hash();
	hash_add(h, mu_b3, TB);
	cr_assert_eq(update_ftrace_direct_add(&bops, h), 0);
	want[3 + 3] = TB;
	expect_small(want);
	cr_assert_eq(update_ftrace_direct_del(&bops, h), 0);
	free_ftrace_hash(h);
	want[3 + 3] = 0;

	cr_assert_eq(unregister_ftrace_direct(&other, TB, true), 0);
	want[0] = 0;
	expect_small(want);
	cr_assert_eq(tc_stat().nr_ops, 0);
	cr_assert_eq(tc_stat().disabled, 0);
}

/* an address inside a site (not its start) is not a site either */
Test(update_ftrace_direct, add_refuses_an_ip_inside_a_site)
{
	static struct ftrace_ops bops;
	struct ftrace_hash *h;

	cr_assert_eq(usft_init(), 0);
	h = new_hash();
	hash_add(h, mu_b0, TA);
	cr_assert_not_null(add_ftrace_hash_entry_direct(h, tc_site(mu_f3) + 1, TA));
	expect_err(update_ftrace_direct_add(&bops, h), -EINVAL);
	free_ftrace_hash(h);
	expect_nop5(mu_b0);
	expect_nop5(mu_f3);
	cr_assert_not(bops.flags & FTRACE_OPS_FL_ENABLED);
	cr_assert_eq(tc_stat().nr_ops, 0);
}

/* an ops made with register_ftrace_direct() takes batch adds too */
Test(update_ftrace_direct, add_to_a_registered_direct_ops)
{
	static struct ftrace_ops d;
	struct ftrace_hash *h;

	cr_assert_eq(usft_init(), 0);
	tab_set(small_fns, NR_SMALL);
	filter_ip(&d, mu_f1);
	cr_assert_eq(register_ftrace_direct(&d, TA), 0);
	h = new_hash();
	hash_add(h, mu_f2, TB);
	cr_assert_eq(update_ftrace_direct_add(&d, h), 0);
	expect_direct(mu_f1, TA);
	expect_direct(mu_f2, TB);
	call_small(1);
	cr_assert_eq(tab_a(mu_f1), 1);
	cr_assert_eq(tab_b(mu_f2), 1);
	cr_assert_eq(update_ftrace_direct_del(&d, h), 0);
	free_ftrace_hash(h);
	expect_nop5(mu_f2);
	expect_direct(mu_f1, TA);
	cr_assert_eq(unregister_ftrace_direct(&d, TA, true), 0);
	expect_nop5(mu_f1);
}

/* ---- 1,000 sites in one call each ------------------------------------------- */

static int many_count(unsigned long want)
{
	int n = 0;

	for (int i = 0; i < NR_MANY; i++) {
		if (want ? tc_call_target((const void *)many[i]) == want
			 : tc_is_nop5((const void *)many[i]))
			n++;
	}
	return n;
}

static void call_many(long x)
{
	for (int i = 0; i < NR_MANY; i++)
		cr_assert_eq(many[i](x), x * 3 + i, "many_%03d(%ld)", i, x);
}

static struct ftrace_hash *many_hash(unsigned long direct)
{
	struct ftrace_hash *h = new_hash();

	for (int i = 0; i < NR_MANY; i++)
		hash_add(h, (const void *)many[i], direct);
	return h;
}

notrace long not_a_site(long x)
{
	return x + 1;
}

Test(update_ftrace_direct, thousand_sites_one_pass_each)
{
	static struct ftrace_ops bops;
	struct ftrace_hash *ha, *hb, *bad;
	struct usft_stats s0, s1;
	int i;

	cr_assert_eq(usft_init(), 0);
	tab_set(many, NR_MANY);
	cr_assert_eq(many_count(0), NR_MANY, "not every site starts nop5");

	/* rollback: one ip in the batch is not a site -> nothing changes */
	bad = many_hash(TA);
	cr_assert_eq(ftrace_location((unsigned long)not_a_site), 0);
	cr_assert_not_null(add_ftrace_hash_entry_direct(bad, (unsigned long)not_a_site, TA));
	s0 = tc_stat();
	expect_err(update_ftrace_direct_add(&bops, bad), -EINVAL);
	free_ftrace_hash(bad);
	s1 = tc_stat();
	cr_assert_eq(many_count(0), NR_MANY, "a refused batch changed sites");
	cr_assert_eq(s1.nr_sites_written, s0.nr_sites_written);
	cr_assert_not(bops.flags & FTRACE_OPS_FL_ENABLED);

	/* add all */
	ha = many_hash(TA);
	s0 = tc_stat();
	cr_assert_eq(update_ftrace_direct_add(&bops, ha), 0);
	s1 = tc_stat();
	cr_assert_eq(many_count(TA), NR_MANY, "only %d of %d sites call tramp_a",
		     many_count(TA), NR_MANY);
	cr_log_info("add: %lu updates, %lu sites written, %lu syncs",
		    s1.nr_updates - s0.nr_updates, s1.nr_sites_written - s0.nr_sites_written,
		    s1.nr_syncs - s0.nr_syncs);
	cr_assert_leq(s1.nr_updates - s0.nr_updates, 2,
		      "%lu code-update passes for one batch add", s1.nr_updates - s0.nr_updates);
	cr_assert_geq(s1.nr_updates - s0.nr_updates, 1);
	cr_assert_eq(s1.nr_sites_written - s0.nr_sites_written, NR_MANY);
	cr_assert_leq(s1.nr_syncs - s0.nr_syncs, 16, "%lu syncs: not one batch",
		      s1.nr_syncs - s0.nr_syncs);
	cr_assert_eq(s1.nr_enabled, NR_MANY);
	cr_assert_eq(s1.nr_direct_in_range, NR_MANY);
	call_many(1);
	cr_assert_eq(atomic_load(&hits_a), NR_MANY);
	for (i = 0; i < NR_MANY; i++)
		cr_assert_eq(atomic_load(&tab.a[i]), 1, "site %#lx hit %ld times", tab.site[i],
			     atomic_load(&tab.a[i]));

	/* mod all: rollback first (one ip the ops does not have) */
	bad = many_hash(TB);
	hash_add(bad, mu_f3, TB);
	expect_err(update_ftrace_direct_mod(&bops, bad, true), -EINVAL);
	free_ftrace_hash(bad);
	cr_assert_eq(many_count(TA), NR_MANY);
	hb = many_hash(TB);
	s0 = tc_stat();
	cr_assert_eq(update_ftrace_direct_mod(&bops, hb, true), 0);
	s1 = tc_stat();
	cr_assert_eq(many_count(TB), NR_MANY, "only %d of %d sites retargeted",
		     many_count(TB), NR_MANY);
	cr_log_info("mod: %lu updates, %lu sites written, %lu syncs",
		    s1.nr_updates - s0.nr_updates, s1.nr_sites_written - s0.nr_sites_written,
		    s1.nr_syncs - s0.nr_syncs);
	/* the tmp_ops dance: one pass to the shared caller, one back */
	cr_assert_leq(s1.nr_updates - s0.nr_updates, 3,
		      "%lu code-update passes for one batch mod", s1.nr_updates - s0.nr_updates);
	cr_assert_leq(s1.nr_syncs - s0.nr_syncs, 32);
	tab_reset();
	call_many(2);
	cr_assert_eq(atomic_load(&hits_b), NR_MANY);
	cr_assert_eq(atomic_load(&hits_a), 0);

	/* del all: rollback first (one entry with the old target) */
	bad = new_hash();
	for (i = 0; i < NR_MANY; i++)
		hash_add(bad, (const void *)many[i], i == NR_MANY / 2 ? TA : TB);
	expect_err(update_ftrace_direct_del(&bops, bad), -EINVAL);
	free_ftrace_hash(bad);
	cr_assert_eq(many_count(TB), NR_MANY);
	s0 = tc_stat();
	cr_assert_eq(update_ftrace_direct_del(&bops, hb), 0);
	s1 = tc_stat();
	cr_assert_eq(many_count(0), NR_MANY, "only %d of %d sites back to nop5",
		     many_count(0), NR_MANY);
	cr_log_info("del: %lu updates, %lu sites written, %lu syncs",
		    s1.nr_updates - s0.nr_updates, s1.nr_sites_written - s0.nr_sites_written,
		    s1.nr_syncs - s0.nr_syncs);
	cr_assert_leq(s1.nr_updates - s0.nr_updates, 2);
	cr_assert_leq(s1.nr_syncs - s0.nr_syncs, 16);
	cr_assert_eq(s1.nr_sites_written - s0.nr_sites_written, NR_MANY);
	cr_assert_not(bops.flags & FTRACE_OPS_FL_ENABLED);
	cr_assert_eq(s1.nr_enabled, 0);
	cr_assert_eq(s1.nr_ops, 0);
	tab_reset();
	call_many(3);
	cr_assert_eq(atomic_load(&hits_a) + atomic_load(&hits_b), 0);
	free_ftrace_hash(ha);
	free_ftrace_hash(hb);
	cr_assert_eq(tc_stat().disabled, 0);
}

/* half added, then the other half in a second batch (hash move), then del half */
Test(update_ftrace_direct, thousand_sites_in_two_halves)
{
	static struct ftrace_ops bops;
	struct ftrace_hash *h1, *h2;
	struct usft_stats s0, s1;
	int i;

	cr_assert_eq(usft_init(), 0);
	h1 = new_hash();
	h2 = new_hash();
	tab_set(many, NR_MANY);
	for (i = 0; i < NR_MANY; i++)
		hash_add(i < NR_MANY / 2 ? h1 : h2, (const void *)many[i], i & 1 ? TB : TA);
	cr_assert_eq(update_ftrace_direct_add(&bops, h1), 0);
	s0 = tc_stat();
	cr_assert_eq(update_ftrace_direct_add(&bops, h2), 0);
	s1 = tc_stat();
	cr_assert_leq(s1.nr_updates - s0.nr_updates, 3);
	cr_assert_eq(s1.nr_sites_written - s0.nr_sites_written, NR_MANY / 2,
		     "second add rewrote %lu sites", s1.nr_sites_written - s0.nr_sites_written);
	cr_assert_eq(many_count(TA), NR_MANY / 2);
	cr_assert_eq(many_count(TB), NR_MANY / 2);
	call_many(1);
	for (i = 0; i < NR_MANY; i++)
		cr_assert_eq(atomic_load(&tab.a[i]) + atomic_load(&tab.b[i]), 1);

	s0 = tc_stat();
	cr_assert_eq(update_ftrace_direct_del(&bops, h1), 0);
	s1 = tc_stat();
	cr_assert_eq(s1.nr_sites_written - s0.nr_sites_written, NR_MANY / 2);
	for (i = 0; i < NR_MANY; i++) {
		if (i < NR_MANY / 2)
			cr_assert(tc_is_nop5((const void *)many[i]), "many_%03d", i);
		else
			cr_assert_eq(tc_call_target((const void *)many[i]), i & 1 ? TB : TA,
				     "many_%03d", i);
	}
	cr_assert(bops.flags & FTRACE_OPS_FL_ENABLED);
	cr_assert_eq(update_ftrace_direct_del(&bops, h2), 0);
	cr_assert_eq(many_count(0), NR_MANY);
	cr_assert_not(bops.flags & FTRACE_OPS_FL_ENABLED);
	free_ftrace_hash(h1);
	free_ftrace_hash(h2);
}
