// SPDX-License-Identifier: MIT
/*
 * prog_tests/trampoline_count.c and fexit_stress.c ported (kernel:
 * BPF_MAX_TRAMP_LINKS, include/linux/bpf.h): exactly 38 links of any mix of kinds
 * attach to one function, the 39th fails with E2BIG (and a NULL link) and
 * changes nothing; the function still works and every callback fires once
 * per call; detaching everything restores the nop5.  38 fexit links and
 * many calls.
 */
#include "tramp_common.h"

#define MAX USFT_TRAMP_MAX_LINKS

TRACEE long tr_cnt_func(long a, long b)
{
	TRACEE_BODY();
	return a * 1000 + b;
}

TRACEE long tr_cnt_other(long a, long b)
{
	TRACEE_BODY();
	return a - b;
}

TRACEE long tr_fexit_stress(long a)
{
	TRACEE_BODY();
	return a * 3 + 1;
}

struct slot {
	long hits;
	long bad;		/* wrong ctx */
	long seq;
	enum usft_tramp_kind kind;
};

static struct slot slots[MAX + 8];
static long seq;

static notrace unsigned long cnt_prog(const unsigned long *ctx, void *cookie)
{
	struct slot *s = cookie;
	long a = (long)ctx[0], b = (long)ctx[1];

	s->hits++;
	s->seq = ++seq;
	if (s->kind == USFT_TRAMP_FEXIT && (long)ctx[2] != a * 1000 + b)
		s->bad++;
	if (s->kind == USFT_TRAMP_FMODRET && ctx[2] != 0)
		s->bad++;
	return 0;
}

static enum usft_tramp_kind kind_of(int i)
{
	static const enum usft_tramp_kind k[3] = { USFT_TRAMP_FENTRY, USFT_TRAMP_FMODRET,
						   USFT_TRAMP_FEXIT };

	return k[i % 3];
}

static void reset_slots(void)
{
	memset(slots, 0, sizeof(slots));
	seq = 0;
}

/* one call: every one of the first @nlinks links runs exactly once */
static void check_call(int nlinks, long a, long b)
{
	for (int i = 0; i < nlinks; i++)
		slots[i].hits = 0;
	cr_assert_eq(tr_cnt_func(a, b), a * 1000 + b, "wrong result with %d links", nlinks);
	for (int i = 0; i < nlinks; i++) {
		cr_assert_eq(slots[i].hits, 1, "link %d (kind %d) of %d: %ld hits for one call", i,
			     slots[i].kind, nlinks, slots[i].hits);
		cr_assert_eq(slots[i].bad, 0, "link %d (kind %d) saw a wrong ctx", i, slots[i].kind);
	}
}

static void max_links(const char *mix, int mode)
{
	struct usft_tramp_link *l[MAX];
	unsigned char before[TC_SITE_SIZE], after[TC_SITE_SIZE];

	cr_assert_eq(usft_init(), 0);
	reset_slots();
	for (int i = 0; i < MAX; i++) {
		enum usft_tramp_kind k = mix ? (enum usft_tramp_kind)(mix[i % strlen(mix)] - '0')
					     : kind_of(i);

		slots[i].kind = k;
		l[i] = tt_attach(tr_cnt_func, k, cnt_prog, &slots[i], -1, mode);
		if (i % 7 == 0)
			check_call(i + 1, i, 7);
	}
	check_call(MAX, 1, 2);

	/* one more of each kind: E2BIG, NULL, nothing changed */
	tc_read_site((const void *)tr_cnt_func, before);
	for (int k = 0; k < 3; k++) {
		slots[MAX].kind = (enum usft_tramp_kind)k;
		tt_expect_fail(E2BIG, tr_cnt_func, (enum usft_tramp_kind)k, cnt_prog, &slots[MAX], -1,
			       mode);
		tt_expect_fail(E2BIG, tr_cnt_func, (enum usft_tramp_kind)k, cnt_prog, &slots[MAX], 2,
			       mode);
	}
	tc_read_site((const void *)tr_cnt_func, after);
	cr_assert(memcmp(before, after, TC_SITE_SIZE) == 0, "a failed attach changed the site");
	check_call(MAX, 3, 4);
	cr_assert_eq(slots[MAX].hits, 0, "the refused link's callback ran");

	/* links run in attach order within each kind */
	for (int i = 0; i < MAX; i++)
		for (int j = i + 1; j < MAX; j++)
			if (slots[i].kind == slots[j].kind)
				cr_assert_lt(slots[i].seq, slots[j].seq,
					     "kind %d: link %d ran after link %d", slots[i].kind, i, j);

	/* other functions are not limited by this one's links */
	{
		struct usft_tramp_link *o = tt_attach(tr_cnt_other, USFT_TRAMP_FEXIT, cnt_prog,
						      &slots[MAX + 1], -1, mode);

		slots[MAX + 1].kind = USFT_TRAMP_FENTRY;	/* ctx[2] not checked */
		cr_assert_eq(tr_cnt_other(5, 3), 2);
		cr_assert_eq(slots[MAX + 1].hits, 1);
		tt_detach(o);
	}

	/* free one slot: exactly one more fits again */
	tt_detach(l[5]);
	slots[5].hits = 0;
	slots[MAX + 2].kind = USFT_TRAMP_FEXIT;
	l[5] = tt_attach(tr_cnt_func, USFT_TRAMP_FEXIT, cnt_prog, &slots[MAX + 2], -1, mode);
	tt_expect_fail(E2BIG, tr_cnt_func, USFT_TRAMP_FENTRY, cnt_prog, &slots[MAX], -1, mode);
	cr_assert_eq(tr_cnt_func(9, 9), 9009);
	cr_assert_eq(slots[MAX + 2].hits, 1);
	cr_assert_eq(slots[5].hits, 0, "detached link ran");

	for (int i = 0; i < MAX; i++) {
		tt_detach(l[i]);
		if (i % 9 == 0)
			cr_assert_eq(tr_cnt_func(2, 3), 2003);
	}
	expect_site(tr_cnt_func, TT_NOP5);
	{
		long h[MAX];

		for (int i = 0; i < MAX; i++)
			h[i] = slots[i].hits;
		cr_assert_eq(tr_cnt_func(1, 1), 1001);
		for (int i = 0; i < MAX; i++)
			cr_assert_eq(slots[i].hits, h[i], "link %d ran after detach", i);
	}
	cr_assert_eq(tc_stat().nr_enabled, 0);

	/* and the function takes 38 links again */
	for (int i = 0; i < MAX; i++)
		l[i] = tt_attach(tr_cnt_func, USFT_TRAMP_FENTRY, cnt_prog, &slots[i], -1, mode);
	tt_expect_fail(E2BIG, tr_cnt_func, USFT_TRAMP_FMODRET, cnt_prog, &slots[MAX], -1, mode);
	for (int i = 0; i < MAX; i++)
		tt_detach(l[i]);
	expect_site(tr_cnt_func, TT_NOP5);
}

Test(trampoline_count, mixed_kinds_jmp)
{
	max_links(NULL, USFT_TRAMP_MODE_AUTO);
}

Test(trampoline_count, mixed_kinds_call)
{
	max_links(NULL, USFT_TRAMP_MODE_CALL);
}

Test(trampoline_count, fentry_only)
{
	max_links("0", USFT_TRAMP_MODE_AUTO);
	expect_site(tr_cnt_func, TT_NOP5);
}

Test(trampoline_count, fmod_ret_only)
{
	max_links("2", USFT_TRAMP_MODE_AUTO);
}

Test(trampoline_count, kernel_order_fentry_fmod_ret_fexit)
{
	/* the kernel test attaches fentry, fmod_ret, fexit in turn */
	max_links("021", USFT_TRAMP_MODE_AUTO);
}

Test(trampoline_count, site_bytes)
{
	struct usft_tramp_link *l[MAX];

	cr_assert_eq(usft_init(), 0);
	reset_slots();
	for (int i = 0; i < MAX; i++) {
		slots[i].kind = USFT_TRAMP_FENTRY;
		l[i] = tt_attach(tr_cnt_func, USFT_TRAMP_FENTRY, cnt_prog, &slots[i], -1, 0);
	}
	expect_site(tr_cnt_func, TT_CALL);
	tt_detach(l[MAX - 1]);
	slots[MAX - 1].kind = USFT_TRAMP_FEXIT;
	l[MAX - 1] = tt_attach(tr_cnt_func, USFT_TRAMP_FEXIT, cnt_prog, &slots[MAX - 1], -1, 0);
	expect_site(tr_cnt_func, TT_JMP);
	tt_expect_fail(E2BIG, tr_cnt_func, USFT_TRAMP_FEXIT, cnt_prog, &slots[MAX], -1, 0);
	expect_site(tr_cnt_func, TT_JMP);
	for (int i = 0; i < MAX; i++)
		tt_detach(l[i]);
	expect_site(tr_cnt_func, TT_NOP5);
}

/* ---- fexit_stress ------------------------------------------------------------ */

static long fexit_hits[MAX];
static long fexit_bad;

static notrace unsigned long stress_fexit(const unsigned long *ctx, void *cookie)
{
	long *h = cookie;

	if ((long)ctx[1] != (long)ctx[0] * 3 + 1)
		fexit_bad++;
	(*h)++;
	return 0;
}

static void fexit_stress(int mode, unsigned char want_site)
{
	struct usft_tramp_link *l[MAX];
	const long calls = 200000;

	cr_assert_eq(usft_init(), 0);
	for (int i = 0; i < MAX; i++)
		l[i] = tt_attach(tr_fexit_stress, USFT_TRAMP_FEXIT, stress_fexit, &fexit_hits[i], -1,
				 mode);
	expect_site(tr_fexit_stress, want_site);
	tt_expect_fail(E2BIG, tr_fexit_stress, USFT_TRAMP_FEXIT, stress_fexit, &fexit_hits[0], -1,
		       mode);
	for (long i = 0; i < calls; i++) {
		long x = i * 7919 - 12345;

		if (tr_fexit_stress(x) != x * 3 + 1)
			cr_assert_fail("wrong result at call %ld", i);
	}
	cr_assert_eq(fexit_bad, 0, "fexit saw a wrong return value %ld times", fexit_bad);
	for (int i = 0; i < MAX; i++)
		cr_assert_eq(fexit_hits[i], calls, "fexit %d: %ld hits for %ld calls", i,
			     fexit_hits[i], calls);
	for (int i = 0; i < MAX; i++)
		tt_detach(l[i]);
	expect_site(tr_fexit_stress, TT_NOP5);
	cr_assert_eq(tr_fexit_stress(1), 4);
	cr_assert_eq(fexit_hits[0], calls);
}

Test(fexit_stress, fexit_38_jmp)
{
	fexit_stress(USFT_TRAMP_MODE_AUTO, TT_JMP);
}

Test(fexit_stress, fexit_38_call)
{
	fexit_stress(USFT_TRAMP_MODE_CALL, TT_CALL);
}

/* 38 fexit links while 4 threads call the function */
static void stress_worker(struct tc_pool *p, int idx, void *arg)
{
	long x = (long)idx << 32;

	while (!tc_pool_should_stop(p)) {
		if (tr_fexit_stress(x) != x * 3 + 1)
			atomic_fetch_add(&p->errors, 1);
		x++;
		atomic_fetch_add_explicit(&p->iters[idx], 1, memory_order_relaxed);
	}
}

static atomic_long mt_hits[MAX];
static atomic_long mt_bad;

static notrace unsigned long mt_fexit(const unsigned long *ctx, void *cookie)
{
	if ((long)ctx[1] != (long)ctx[0] * 3 + 1)
		atomic_fetch_add(&mt_bad, 1);
	atomic_fetch_add_explicit((atomic_long *)cookie, 1, memory_order_relaxed);
	return 0;
}

Test(fexit_stress, fexit_38_threads)
{
	struct usft_tramp_link *l[MAX];
	struct tc_pool pool;
	unsigned long total = 0;

	cr_assert_eq(usft_init(), 0);
	for (int i = 0; i < MAX; i++)
		l[i] = tt_attach(tr_fexit_stress, USFT_TRAMP_FEXIT, mt_fexit, &mt_hits[i], -1, 0);
	cr_assert_eq(tc_pool_start(&pool, 4, stress_worker, NULL), 0);
	tc_pool_wait_iters(&pool, 50000);
	tc_pool_stop(&pool);
	for (int i = 0; i < 4; i++)
		total += atomic_load(&pool.iters[i]);
	cr_assert_eq(atomic_load(&pool.errors), 0, "wrong results in worker threads");
	cr_assert_eq(atomic_load(&mt_bad), 0);
	for (int i = 0; i < MAX; i++)
		cr_assert_eq((unsigned long)atomic_load(&mt_hits[i]), total,
			     "fexit %d: %ld hits for %lu calls", i, atomic_load(&mt_hits[i]), total);
	for (int i = 0; i < MAX; i++)
		tt_detach(l[i]);
	expect_site(tr_fexit_stress, TT_NOP5);
}
