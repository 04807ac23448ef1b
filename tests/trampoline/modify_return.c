// SPDX-License-Identifier: MIT
/*
 * prog_tests/modify_return.c ported (kernel:
 * BPF_TRAMP_F_* and __arch_prepare_bpf_trampoline()):
 * fentry, fexit and fmod_ret on a function with a side effect.
 *   fmod_ret returns 0   -> the original runs (side effect), the caller and
 *                           fexit see its return value
 *   fmod_ret returns -22 -> the original is skipped (no side effect), the
 *                           caller and fexit see -22
 * fentry and fexit fire exactly once either way, in the order fentry,
 * fmod_ret, original, fexit; in jmp mode (default, jmp=1, site e9), with
 * opts.mode = CALL or jmp=0 (site e8), and MODE_JMP.  Several fmod_ret links
 * run in attach order; ctx[nr_args] of each is the previous one's return
 * (0 for the first); the first non-zero return ends the chain (the kernel's
 * "cmp [rbp-8],0; jne do_fexit" after every fmod_ret program).
 */
#include "tramp_common.h"

#define EINJ ((unsigned long)-22L)

static long side_effect;
static long seq;		/* global event order */
static long orig_seq;

/* kernel bpf_modify_return_test(int a, int *b): *b += 1; return a + *b; */
TRACEE long tr_mr_func(long a, long *b)
{
	TRACEE_BODY();
	side_effect++;
	orig_seq = ++seq;
	*b += 1;
	return a + *b;
}

/* one record per callback */
struct rec {
	long hits;
	long seq;
	unsigned long a;	/* ctx[0] */
	long b;			/* *(long *)ctx[1] at the time of the call */
	unsigned long prev;	/* ctx[2]: fexit: return value; fmod_ret: previous fmod_ret */
	unsigned long retval;	/* what an fmod_ret returns */
};

static notrace void rec_hit(struct rec *r, const unsigned long *ctx, bool has_ret)
{
	r->hits++;
	r->seq = ++seq;
	r->a = ctx[0];
	r->b = *(long *)ctx[1];
	if (has_ret)
		r->prev = ctx[2];
}

static notrace unsigned long on_fentry(const unsigned long *ctx, void *cookie)
{
	rec_hit(cookie, ctx, false);
	return 0x1234;	/* ignored */
}

static notrace unsigned long on_fexit(const unsigned long *ctx, void *cookie)
{
	rec_hit(cookie, ctx, true);
	return 0x5678;	/* ignored */
}

static notrace unsigned long on_fmod_ret(const unsigned long *ctx, void *cookie)
{
	struct rec *r = cookie;

	rec_hit(r, ctx, true);
	return r->retval;
}

static void reset(void)
{
	side_effect = 0;
	seq = 0;
	orig_seq = 0;
}

static void expect_plain_call(void)
{
	long b = 1;

	reset();
	cr_assert_eq(tr_mr_func(7, &b), 9);
	cr_assert_eq(side_effect, 1);
	cr_assert_eq(b, 2);
}

/*
 * The kernel's run_test(input_retval, want_side_effect, want_ret): attach
 * fentry, fexit and fmod_ret with @mode, call once, check, detach.
 */
static void run_test(int mode, unsigned char want_site, unsigned long input_retval)
{
	struct rec fentry = { 0 }, fexit = { 0 }, fmod = { .retval = input_retval };
	struct usft_tramp_link *l_fentry, *l_fexit, *l_fmod;
	bool skip = input_retval != 0;
	long b = 1, r;

	cr_assert_eq(usft_init(), 0);
	expect_site(tr_mr_func, TT_NOP5);
	l_fentry = tt_attach(tr_mr_func, USFT_TRAMP_FENTRY, on_fentry, &fentry, -1, mode);
	l_fexit = tt_attach(tr_mr_func, USFT_TRAMP_FEXIT, on_fexit, &fexit, -1, mode);
	l_fmod = tt_attach(tr_mr_func, USFT_TRAMP_FMODRET, on_fmod_ret, &fmod, -1, mode);
	expect_site(tr_mr_func, want_site);

	reset();
	r = tr_mr_func(7, &b);

	cr_assert_eq(fentry.hits, 1, "fentry ran %ld times", fentry.hits);
	cr_assert_eq(fmod.hits, 1, "fmod_ret ran %ld times", fmod.hits);
	cr_assert_eq(fexit.hits, 1, "fexit ran %ld times", fexit.hits);
	cr_assert_eq(fentry.a, 7);
	cr_assert_eq(fentry.b, 1);
	cr_assert_eq(fmod.a, 7);
	cr_assert_eq(fmod.b, 1);
	cr_assert_eq(fmod.prev, 0, "first fmod_ret: ctx[nr_args] = %#lx, expected 0", fmod.prev);
	cr_assert_eq(fexit.a, 7, "fexit ctx[0] = %lu", fexit.a);
	cr_assert_lt(fentry.seq, fmod.seq, "fentry must run before fmod_ret");
	if (!skip) {
		cr_assert_eq(side_effect, 1, "fmod_ret returned 0: the original must run once");
		cr_assert_eq(b, 2);
		cr_assert_eq(r, 9, "caller got %ld, expected the original's 9", r);
		cr_assert_eq(fexit.prev, 9, "fexit ctx[nr_args] = %ld, expected 9", (long)fexit.prev);
		cr_assert_eq(fexit.b, 2, "fexit sees the side effect through the pointer");
		cr_assert(fmod.seq < orig_seq && orig_seq < fexit.seq,
			  "order fmod_ret %ld, original %ld, fexit %ld", fmod.seq, orig_seq, fexit.seq);
	} else {
		cr_assert_eq(side_effect, 0, "fmod_ret returned %ld: the original must not run",
			     (long)input_retval);
		cr_assert_eq(b, 1);
		cr_assert_eq(r, (long)input_retval, "caller got %ld, expected %ld", r,
			     (long)input_retval);
		cr_assert_eq(fexit.prev, input_retval, "fexit ctx[nr_args] = %ld, expected %ld",
			     (long)fexit.prev, (long)input_retval);
		cr_assert_lt(fmod.seq, fexit.seq);
	}

	tt_detach(l_fmod);
	tt_detach(l_fexit);
	tt_detach(l_fentry);
	expect_site(tr_mr_func, TT_NOP5);
	fentry.hits = fexit.hits = fmod.hits = 0;
	expect_plain_call();
	cr_assert_eq(fentry.hits + fexit.hits + fmod.hits, 0, "callback after detach");
}

static void run_both(int mode, unsigned char want_site)
{
	run_test(mode, want_site, 0);		/* original runs */
	run_test(mode, want_site, EINJ);	/* original skipped */
	run_test(mode, want_site, 0);		/* and back */
}

Test(modify_return, jmp_mode_default)
{
	run_both(USFT_TRAMP_MODE_AUTO, TT_JMP);
}

Test(modify_return, mode_jmp_explicit)
{
	run_both(USFT_TRAMP_MODE_JMP, TT_JMP);
}

Test(modify_return, mode_call)
{
	run_both(USFT_TRAMP_MODE_CALL, TT_CALL);
}

Test(modify_return, jmp_option_off)
{
	cr_assert_eq(usft_init(), 0);
	tt_set_option("jmp", "0");
	run_both(USFT_TRAMP_MODE_AUTO, TT_CALL);
	tt_set_option("jmp", "1");
	run_both(USFT_TRAMP_MODE_AUTO, TT_JMP);
}

Test(modify_return, null_opts_defaults)
{
	struct rec fexit = { 0 }, fmod = { .retval = EINJ };
	struct usft_tramp_link *a, *b;
	long v = 1;

	cr_assert_eq(usft_init(), 0);
	a = usft_tramp_attach((void *)tr_mr_func, USFT_TRAMP_FEXIT, on_fexit, &fexit, NULL);
	cr_assert_not_null(a, "attach with NULL opts: errno %d", errno);
	b = usft_tramp_attach((void *)tr_mr_func, USFT_TRAMP_FMODRET, on_fmod_ret, &fmod, NULL);
	cr_assert_not_null(b, "attach with NULL opts: errno %d", errno);
	expect_site(tr_mr_func, TT_JMP);
	reset();
	cr_assert_eq(tr_mr_func(3, &v), -22);
	cr_assert_eq(side_effect, 0);
	cr_assert_eq(fexit.hits, 1);
	cr_assert_eq(fexit.prev, EINJ);
	cr_assert_eq(fexit.a, 3);
	tt_detach(b);
	tt_detach(a);
	expect_site(tr_mr_func, TT_NOP5);
}

/* each kind alone: fentry-only is call mode, fexit / fmod_ret alone jmp mode */
Test(modify_return, each_kind_alone)
{
	struct rec r = { 0 };
	struct usft_tramp_link *l;
	long b;

	cr_assert_eq(usft_init(), 0);

	l = tt_attach(tr_mr_func, USFT_TRAMP_FENTRY, on_fentry, &r, -1, USFT_TRAMP_MODE_AUTO);
	expect_site(tr_mr_func, TT_CALL);
	reset();
	b = 1;
	cr_assert_eq(tr_mr_func(7, &b), 9);
	cr_assert_eq(side_effect, 1);
	cr_assert_eq(r.hits, 1);
	cr_assert_lt(r.seq, orig_seq);
	tt_detach(l);
	expect_site(tr_mr_func, TT_NOP5);

	/* MODE_JMP on a fentry-only image: nothing to return to, still call mode */
	l = tt_attach(tr_mr_func, USFT_TRAMP_FENTRY, on_fentry, &r, -1, USFT_TRAMP_MODE_JMP);
	expect_site(tr_mr_func, TT_CALL);
	b = 1;
	cr_assert_eq(tr_mr_func(7, &b), 9);
	cr_assert_eq(r.hits, 2);
	tt_detach(l);

	memset(&r, 0, sizeof(r));
	l = tt_attach(tr_mr_func, USFT_TRAMP_FEXIT, on_fexit, &r, -1, USFT_TRAMP_MODE_AUTO);
	expect_site(tr_mr_func, TT_JMP);
	reset();
	b = 1;
	cr_assert_eq(tr_mr_func(7, &b), 9);
	cr_assert_eq(side_effect, 1);
	cr_assert_eq(r.hits, 1);
	cr_assert_eq(r.prev, 9);
	cr_assert_gt(r.seq, orig_seq);
	tt_detach(l);
	expect_site(tr_mr_func, TT_NOP5);

	memset(&r, 0, sizeof(r));
	r.retval = EINJ;
	l = tt_attach(tr_mr_func, USFT_TRAMP_FMODRET, on_fmod_ret, &r, -1, USFT_TRAMP_MODE_AUTO);
	expect_site(tr_mr_func, TT_JMP);
	reset();
	b = 1;
	cr_assert_eq(tr_mr_func(7, &b), -22);
	cr_assert_eq(side_effect, 0);
	cr_assert_eq(r.hits, 1);
	cr_assert_eq(r.prev, 0);
	r.retval = 0;
	b = 1;
	cr_assert_eq(tr_mr_func(7, &b), 9);
	cr_assert_eq(side_effect, 1);
	cr_assert_eq(r.hits, 2);
	tt_detach(l);
	expect_site(tr_mr_func, TT_NOP5);
	expect_plain_call();
}

/* The image follows the links: nop5 -> e8 -> e9 -> e8 -> e9 -> e9 -> nop5. */
Test(modify_return, site_follows_the_links)
{
	struct rec en = { 0 }, ex = { 0 }, fm = { 0 };
	struct usft_tramp_link *l_en, *l_ex, *l_fm;
	long b;

#define CALL_OK()                                                              \
	do {                                                                   \
		b = 1;                                                         \
		cr_assert_eq(tr_mr_func(7, &b), 9);                            \
	} while (0)

	cr_assert_eq(usft_init(), 0);
	expect_site(tr_mr_func, TT_NOP5);
	l_en = tt_attach(tr_mr_func, USFT_TRAMP_FENTRY, on_fentry, &en, -1, 0);
	expect_site(tr_mr_func, TT_CALL);
	CALL_OK();
	l_ex = tt_attach(tr_mr_func, USFT_TRAMP_FEXIT, on_fexit, &ex, -1, 0);
	expect_site(tr_mr_func, TT_JMP);
	CALL_OK();
	tt_detach(l_ex);
	expect_site(tr_mr_func, TT_CALL);
	CALL_OK();
	l_fm = tt_attach(tr_mr_func, USFT_TRAMP_FMODRET, on_fmod_ret, &fm, -1, 0);
	expect_site(tr_mr_func, TT_JMP);
	CALL_OK();
	tt_detach(l_en);
	expect_site(tr_mr_func, TT_JMP);
	CALL_OK();
	tt_detach(l_fm);
	expect_site(tr_mr_func, TT_NOP5);
	CALL_OK();
	cr_assert_eq(en.hits, 4);
	cr_assert_eq(ex.hits, 1);
	cr_assert_eq(fm.hits, 2);

	/* a CALL-mode link forces call mode on the whole image */
	l_ex = tt_attach(tr_mr_func, USFT_TRAMP_FEXIT, on_fexit, &ex, -1, 0);
	expect_site(tr_mr_func, TT_JMP);
	l_fm = tt_attach(tr_mr_func, USFT_TRAMP_FMODRET, on_fmod_ret, &fm, -1,
			 USFT_TRAMP_MODE_CALL);
	expect_site(tr_mr_func, TT_CALL);
	CALL_OK();
	tt_detach(l_fm);
	expect_site(tr_mr_func, TT_JMP);
	CALL_OK();
	tt_detach(l_ex);
	expect_site(tr_mr_func, TT_NOP5);
	cr_assert_eq(ex.hits, 3);
#undef CALL_OK
}

/* Several fmod_ret links: attach order, ctx[nr_args] chain, first non-zero wins. */
static void chain(int mode, unsigned char want_site)
{
	struct rec fm[3] = { 0 }, en = { 0 }, ex = { 0 };
	struct usft_tramp_link *l[3], *l_en, *l_ex;
	long b, r;

	cr_assert_eq(usft_init(), 0);
	l_ex = tt_attach(tr_mr_func, USFT_TRAMP_FEXIT, on_fexit, &ex, -1, mode);
	for (int i = 0; i < 3; i++)
		l[i] = tt_attach(tr_mr_func, USFT_TRAMP_FMODRET, on_fmod_ret, &fm[i], -1, mode);
	l_en = tt_attach(tr_mr_func, USFT_TRAMP_FENTRY, on_fentry, &en, -1, mode);
	expect_site(tr_mr_func, want_site);

	/* all return 0: each runs once in attach order, each sees 0, original runs */
	reset();
	b = 1;
	r = tr_mr_func(7, &b);
	cr_assert_eq(r, 9);
	cr_assert_eq(side_effect, 1);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(fm[i].hits, 1, "fmod_ret %d ran %ld times", i, fm[i].hits);
		cr_assert_eq(fm[i].prev, 0, "fmod_ret %d: ctx[nr_args] %#lx", i, fm[i].prev);
	}
	cr_assert(en.seq < fm[0].seq && fm[0].seq < fm[1].seq && fm[1].seq < fm[2].seq &&
		  fm[2].seq < orig_seq && orig_seq < ex.seq,
		  "order fentry %ld, fmod_ret %ld %ld %ld, original %ld, fexit %ld", en.seq,
		  fm[0].seq, fm[1].seq, fm[2].seq, orig_seq, ex.seq);
	cr_assert_eq(ex.prev, 9);

	/* the second returns -22: the second saw the first's return (0), the
	 * third does not run, the original is skipped, fexit sees -22 */
	fm[1].retval = EINJ;
	reset();
	b = 1;
	r = tr_mr_func(7, &b);
	cr_assert_eq(r, -22, "caller got %ld", r);
	cr_assert_eq(side_effect, 0);
	cr_assert_eq(fm[0].hits, 2);
	cr_assert_eq(fm[1].hits, 2);
	cr_assert_eq(fm[1].prev, 0, "second fmod_ret: ctx[nr_args] = %#lx, the first returned 0",
		     fm[1].prev);
	cr_assert_eq(fm[2].hits, 1, "fmod_ret after a non-zero return must not run (ran %ld)",
		     fm[2].hits - 1);
	cr_assert_eq(en.hits, 2);
	cr_assert_eq(ex.hits, 2);
	cr_assert_eq(ex.prev, EINJ);

	/* the first returns a value: nobody after it runs */
	fm[0].retval = 1000;
	fm[1].retval = 0;
	reset();
	b = 1;
	r = tr_mr_func(7, &b);
	cr_assert_eq(r, 1000);
	cr_assert_eq(side_effect, 0);
	cr_assert_eq(fm[0].hits, 3);
	cr_assert_eq(fm[1].hits, 2);
	cr_assert_eq(fm[2].hits, 1);
	cr_assert_eq(ex.prev, 1000);

	/* drop the first: the old second is now first and sees 0 */
	tt_detach(l[0]);
	fm[1].retval = 77;
	reset();
	b = 1;
	cr_assert_eq(tr_mr_func(7, &b), 77);
	cr_assert_eq(fm[0].hits, 3);
	cr_assert_eq(fm[1].hits, 3);
	cr_assert_eq(fm[1].prev, 0);
	cr_assert_eq(fm[2].hits, 1);
	cr_assert_eq(ex.prev, 77);
	cr_assert_eq(ex.hits, 4);
	cr_assert_eq(en.hits, 4);

	/* a link attached later runs last */
	fm[1].retval = 0;
	fm[0].retval = 5;
	l[0] = tt_attach(tr_mr_func, USFT_TRAMP_FMODRET, on_fmod_ret, &fm[0], -1, mode);
	reset();
	b = 1;
	cr_assert_eq(tr_mr_func(7, &b), 5);
	cr_assert(fm[1].seq < fm[2].seq && fm[2].seq < fm[0].seq,
		  "order after re-attach: %ld %ld %ld", fm[1].seq, fm[2].seq, fm[0].seq);

	tt_detach(l_en);
	for (int i = 0; i < 3; i++)
		tt_detach(l[i]);
	expect_site(tr_mr_func, want_site);	/* fexit alone */
	tt_detach(l_ex);
	expect_site(tr_mr_func, TT_NOP5);
	expect_plain_call();
}

Test(modify_return, fmod_ret_chain_jmp)
{
	chain(USFT_TRAMP_MODE_AUTO, TT_JMP);
}

Test(modify_return, fmod_ret_chain_call)
{
	chain(USFT_TRAMP_MODE_CALL, TT_CALL);
}

/* Many calls in a row with the skip decided per call. */
static notrace unsigned long odd_skips(const unsigned long *ctx, void *cookie)
{
	return (ctx[0] & 1) ? (unsigned long)(-(long)ctx[0]) : 0;
}

static notrace unsigned long count_fexit(const unsigned long *ctx, void *cookie)
{
	long a = (long)ctx[0], want = (a & 1) ? -a : a + 2;

	if ((long)ctx[2] != want)
		(*(long *)cookie) += 1000000;
	(*(long *)cookie)++;
	return 0;
}

static void per_call_skip(int mode)
{
	struct usft_tramp_link *fm, *ex;
	long fexit_cnt = 0;

	cr_assert_eq(usft_init(), 0);
	ex = tt_attach(tr_mr_func, USFT_TRAMP_FEXIT, count_fexit, &fexit_cnt, 2, mode);
	fm = tt_attach(tr_mr_func, USFT_TRAMP_FMODRET, odd_skips, NULL, 2, mode);
	reset();
	for (long i = 0; i < 10000; i++) {
		long b = 1, r = tr_mr_func(i, &b);

		if (i & 1)
			cr_assert_eq(r, -i);
		else
			cr_assert_eq(r, i + 2);
	}
	cr_assert_eq(side_effect, 5000);
	cr_assert_eq(fexit_cnt, 10000, "fexit count %ld (>= 1000000: wrong ctx[nr_args])",
		     fexit_cnt);
	tt_detach(fm);
	tt_detach(ex);
	expect_site(tr_mr_func, TT_NOP5);
}

Test(modify_return, per_call_skip_jmp)
{
	per_call_skip(USFT_TRAMP_MODE_AUTO);
}

Test(modify_return, per_call_skip_call)
{
	per_call_skip(USFT_TRAMP_MODE_CALL);
}
