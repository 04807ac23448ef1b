// SPDX-License-Identifier: MIT
/*
 * Arguments and function models (kernel: struct btf_func_model,
 * __arch_prepare_bpf_trampoline()'s frame; prog_tests/fentry_test.c, fexit_test.c; usft/trampoline.h):
 *  - fentry / fexit see all six integer arguments in ctx[0..5] (nr_args
 *    given, and from DWARF), fexit the return value in ctx[6]
 *  - double arguments / return from DWARF (fp_mask): the function computes
 *    the right result while attached, ctx holds the raw bits
 *  - variadic functions (DWARF: unspecified parameters): right results
 *  - 7 integer arguments, a struct by value, a struct returned in memory,
 *    long double -> EOPNOTSUPP
 *  - no DWARF (assembly; an object built with -g0): nr_args -1 -> ENOENT,
 *    an explicit nr_args works
 *  - the error codes of usft_tramp_attach() / usft_tramp_detach()
 * Callbacks clobber every argument register (integer and vector), so an
 * image that fails to preserve one shows in the result.
 */
#include <stdarg.h>

#include "tramp_common.h"

/* ---- traced functions ---------------------------------------------------- */

#define W6(a, b, c, d, e, f) ((a) * 3 + (b) * 5 + (c) * 7 + (d) * 11 + (e) * 13 + (f) * 17)

TRACEE long tr_args6(long a, long b, long c, long d, long e, long f)
{
	TRACEE_BODY();
	return W6(a, b, c, d, e, f);
}

TRACEE long tr_args0(void)
{
	TRACEE_BODY();
	return 4242;
}

TRACEE double tr_fp(double x, long n, double y)
{
	TRACEE_BODY();
	return x * (double)n + y;
}

TRACEE float tr_fp_f(float x, float y)
{
	TRACEE_BODY();
	return x * y;
}

TRACEE double tr_vsum(int n, ...)
{
	va_list ap;
	double s = 0;

	TRACEE_BODY();
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		s += va_arg(ap, double) * (i + 1);
	va_end(ap);
	return s;
}

TRACEE long tr_vsum_l(int n, ...)
{
	va_list ap;
	long s = 0;

	TRACEE_BODY();
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		s += va_arg(ap, long) * (i + 1);
	va_end(ap);
	return s;
}

TRACEE long tr_args7(long a, long b, long c, long d, long e, long f, long g)
{
	TRACEE_BODY();
	return W6(a, b, c, d, e, f) + g * 19;
}

struct tr_pair {
	long a, b;
};

TRACEE long tr_struct(struct tr_pair p)
{
	TRACEE_BODY();
	return p.a * 10 + p.b;
}

struct tr_big {
	long v[4];
};

TRACEE struct tr_big tr_ret_big(long x)
{
	struct tr_big r = { { x, x + 1, x + 2, x + 3 } };

	TRACEE_BODY();
	return r;
}

TRACEE long double tr_ldbl(long double x)
{
	TRACEE_BODY();
	return x * 2;
}

/* no DWARF: asm_func.S, nodebug.c */
long tr_asm_add3(long x);
long tr_asm_sub(long a, long b);
long tr_nodbg_mul(long a, long b);

/* not a site */
static notrace long tr_notrace(long x)
{
	return x + 1;
}

/* ---- callbacks ------------------------------------------------------------ */

static notrace void clobber_all(void)
{
#if defined(__aarch64__)
	asm volatile("mov x0, #0x5a5a\n\tmov x1, x0\n\tmov x2, x0\n\tmov x3, x0\n\t"
		     "mov x4, x0\n\tmov x5, x0\n\tmov x6, x0\n\tmov x7, x0\n\t"
		     "mov x8, x0\n\tmov x9, x0\n\tmov x10, x0\n\tmov x11, x0\n\tmov x18, x0\n\t"
		     "dup v0.2d, x0\n\tdup v1.2d, x0\n\tdup v2.2d, x0\n\tdup v3.2d, x0\n\t"
		     "dup v4.2d, x0\n\tdup v5.2d, x0\n\tdup v6.2d, x0\n\tdup v7.2d, x0"
		     ::: "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10",
		       "x11", "x18", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "memory");
#else
	asm volatile("mov $0x5a5a5a5a, %%eax\n\t"
		     "mov %%rax, %%rdi\n\tmov %%rax, %%rsi\n\tmov %%rax, %%rdx\n\t"
		     "mov %%rax, %%rcx\n\tmov %%rax, %%r8\n\tmov %%rax, %%r9\n\t"
		     "mov %%rax, %%r10\n\tmov %%rax, %%r11\n\t"
		     "movq %%rax, %%xmm0\n\tmovq %%rax, %%xmm1\n\tmovq %%rax, %%xmm2\n\t"
		     "movq %%rax, %%xmm3\n\tmovq %%rax, %%xmm4\n\tmovq %%rax, %%xmm5\n\t"
		     "movq %%rax, %%xmm6\n\tmovq %%rax, %%xmm7\n\t"
		     ::: "rax", "rdi", "rsi", "rdx", "rcx", "r8", "r9", "r10", "r11",
		       "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
		       "memory", "cc");
#endif
}

struct seen {
	int nr;			/* how many ctx slots to copy */
	long hits;
	unsigned long ctx[8];
};

static notrace unsigned long record(const unsigned long *ctx, void *cookie)
{
	struct seen *s = cookie;

	for (int i = 0; i < s->nr; i++)
		s->ctx[i] = ctx[i];
	s->hits++;
	clobber_all();
	return 0;
}

static notrace unsigned long nop_prog(const unsigned long *ctx, void *cookie)
{
	clobber_all();
	return 0;
}

/* ---- six integer arguments ----------------------------------------------- */

static void six_args(int nr_args, int mode)
{
	struct seen en = { .nr = 6 }, ex = { .nr = 7 };
	struct usft_tramp_link *a, *b;
	long v[6] = { 0x1111111111L, -2, 0x3333, -0x44444444444L, 5, 0x7fffffffffffL };

	cr_assert_eq(usft_init(), 0);
	a = tt_attach(tr_args6, USFT_TRAMP_FENTRY, record, &en, nr_args, mode);
	expect_site(tr_args6, TT_CALL);
	cr_assert_eq(tr_args6(v[0], v[1], v[2], v[3], v[4], v[5]), W6(v[0], v[1], v[2], v[3], v[4], v[5]),
		     "fentry-only image: wrong result");
	b = tt_attach(tr_args6, USFT_TRAMP_FEXIT, record, &ex, nr_args, mode);
	for (int k = 0; k < 3; k++) {
		long want;

		v[k] += k * 1000 + 1;
		want = W6(v[0], v[1], v[2], v[3], v[4], v[5]);
		cr_assert_eq(tr_args6(v[0], v[1], v[2], v[3], v[4], v[5]), want);
		for (int i = 0; i < 6; i++) {
			cr_assert_eq(en.ctx[i], (unsigned long)v[i], "fentry ctx[%d] = %#lx, want %#lx",
				     i, en.ctx[i], (unsigned long)v[i]);
			cr_assert_eq(ex.ctx[i], (unsigned long)v[i], "fexit ctx[%d] = %#lx, want %#lx",
				     i, ex.ctx[i], (unsigned long)v[i]);
		}
		cr_assert_eq((long)ex.ctx[6], want, "fexit ctx[6] = %ld, want %ld", (long)ex.ctx[6],
			     want);
	}
	cr_assert_eq(en.hits, 4);
	cr_assert_eq(ex.hits, 3);
	tt_detach(a);
	tt_detach(b);
	expect_site(tr_args6, TT_NOP5);
}

Test(args, six_ints_nr_args_given)
{
	six_args(6, USFT_TRAMP_MODE_AUTO);
}

Test(args, six_ints_from_dwarf)
{
	six_args(-1, USFT_TRAMP_MODE_AUTO);
}

Test(args, six_ints_from_dwarf_call_mode)
{
	six_args(-1, USFT_TRAMP_MODE_CALL);
}

Test(args, zero_args)
{
	struct seen ex = { .nr = 1 };
	struct usft_tramp_link *l;

	cr_assert_eq(usft_init(), 0);
	l = tt_attach(tr_args0, USFT_TRAMP_FEXIT, record, &ex, -1, 0);
	cr_assert_eq(tr_args0(), 4242);
	cr_assert_eq(ex.hits, 1);
	cr_assert_eq(ex.ctx[0], 4242, "fexit ctx[0] (return, nr_args 0) = %lu", ex.ctx[0]);
	tt_detach(l);
}

#if !defined(__clang__)
/*
 * A GNU C nested function reads its parent's locals through the static
 * chain (x86-64 r10, arm64 x18), and has no DWARF model (the lookup never
 * descends into a function): its images must keep that register for the
 * body whatever the callback does to it.  (clang has no nested functions.)
 */
static notrace __attribute__((noinline)) long tr_nested_parent(long x)
{
	long base = x * 7;

	__attribute__((noinline, noipa)) long tr_nested_inner(long y)
	{
		TRACEE_BODY();
		return base + y;
	}
	return tr_nested_inner(x + 1) + tr_nested_inner(x + 2);
}

Test(args, nested_function_keeps_its_static_chain)
{
	struct seen en = { .nr = 1 }, ex = { .nr = 2 };
	struct usft_tramp_link *a, *b;
	unsigned long site;

	cr_assert_eq(usft_init(), 0);
	cr_assert_eq(usft_match_sites("tr_nested_inner*", -1, &site, 1), 1);
	errno = 0;
	cr_assert_null(usft_tramp_attach((void *)site, USFT_TRAMP_FENTRY, record, &en, NULL));
	cr_assert_eq(errno, ENOENT, "a nested function has no DWARF model");
	a = tt_attach((void *)site, USFT_TRAMP_FENTRY, record, &en, 1, 0);
	cr_assert_eq(tr_nested_parent(5), 35 + 6 + 35 + 7);
	b = tt_attach((void *)site, USFT_TRAMP_FEXIT, record, &ex, 1, 0);
	cr_assert_eq(tr_nested_parent(10), 70 + 11 + 70 + 12);
	cr_assert_eq(en.hits, 4);
	cr_assert_eq(ex.hits, 2);
	cr_assert_eq(ex.ctx[1], 70 + 12, "fexit ctx[1] = %lu", ex.ctx[1]);
	tt_detach(b);
	tt_detach(a);
}
#endif

/* nr_args -1 on a function whose links gave nr_args: agrees by definition */
Test(args, nr_args_must_agree)
{
	struct seen en = { .nr = 6 };
	struct usft_tramp_link *a, *b;

	cr_assert_eq(usft_init(), 0);
	a = tt_attach(tr_args6, USFT_TRAMP_FENTRY, record, &en, 6, 0);
	tt_expect_fail(EINVAL, tr_args6, USFT_TRAMP_FEXIT, record, &en, 5, 0);
	tt_expect_fail(EINVAL, tr_args6, USFT_TRAMP_FENTRY, record, &en, 0, 0);
	b = tt_attach(tr_args6, USFT_TRAMP_FEXIT, nop_prog, NULL, -1, 0);
	tt_detach(b);
	b = tt_attach(tr_args6, USFT_TRAMP_FMODRET, nop_prog, NULL, 6, 0);
	cr_assert_eq(tr_args6(1, 2, 3, 4, 5, 6), W6(1, 2, 3, 4, 5, 6));
	tt_detach(b);
	tt_detach(a);
	/* all links gone: a new model may be given */
	a = tt_attach(tr_args6, USFT_TRAMP_FENTRY, record, &en, 2, 0);
	en.nr = 2;
	cr_assert_eq(tr_args6(1, 2, 3, 4, 5, 6), W6(1, 2, 3, 4, 5, 6));
	cr_assert_eq(en.ctx[0], 1);
	cr_assert_eq(en.ctx[1], 2);
	tt_detach(a);
	expect_site(tr_args6, TT_NOP5);
}

/* ---- floating point ------------------------------------------------------ */

static void fp_args(int mode, unsigned char want_site)
{
	struct seen en = { .nr = 3 }, ex = { .nr = 4 };
	struct usft_tramp_link *a, *b;

	cr_assert_eq(usft_init(), 0);
	a = tt_attach(tr_fp, USFT_TRAMP_FENTRY, record, &en, -1, mode);
	expect_site(tr_fp, TT_CALL);
	cr_assert_eq(tr_fp(1.5, 3, 0.25), 4.75, "fentry-only image: wrong double result");
	cr_assert_eq(en.ctx[0], tt_dbits(1.5), "ctx[0] = %#lx, want the bits of 1.5", en.ctx[0]);
	cr_assert_eq(en.ctx[1], 3);
	cr_assert_eq(en.ctx[2], tt_dbits(0.25), "ctx[2] = %#lx, want the bits of 0.25", en.ctx[2]);

	b = tt_attach(tr_fp, USFT_TRAMP_FEXIT, record, &ex, -1, mode);
	expect_site(tr_fp, want_site);
	for (int i = 1; i < 200; i++) {
		double x = i * 0.5, y = -1.0 / i, want = x * (double)(i - 7) + y;
		double r = tr_fp(x, i - 7, y);

		cr_assert_eq(r, want, "tr_fp(%g, %d, %g) = %g, want %g", x, i - 7, y, r, want);
		cr_assert_eq(en.ctx[0], tt_dbits(x));
		cr_assert_eq((long)en.ctx[1], i - 7);
		cr_assert_eq(en.ctx[2], tt_dbits(y));
		cr_assert_eq(ex.ctx[0], tt_dbits(x));
		cr_assert_eq(ex.ctx[2], tt_dbits(y));
		cr_assert_eq(ex.ctx[3], tt_dbits(want), "fexit ctx[3] = %#lx (%g), want the bits of %g",
			     ex.ctx[3], tt_bitsd(ex.ctx[3]), want);
	}
	tt_detach(a);
	expect_site(tr_fp, want_site);
	cr_assert_eq(tr_fp(2.0, 2, 1.0), 5.0);
	cr_assert_eq(ex.ctx[3], tt_dbits(5.0));
	tt_detach(b);
	expect_site(tr_fp, TT_NOP5);
	cr_assert_eq(tr_fp(2.0, 2, 1.0), 5.0);
}

Test(args, double_args_and_return_jmp)
{
	fp_args(USFT_TRAMP_MODE_AUTO, TT_JMP);
}

Test(args, double_args_and_return_call)
{
	fp_args(USFT_TRAMP_MODE_CALL, TT_CALL);
}

/* fmod_ret on a double function: its return (raw bits) is the double result */
static notrace unsigned long fp_override(const unsigned long *ctx, void *cookie)
{
	return tt_bitsd(ctx[0]) < 0 ? tt_dbits(-1.25) : 0;
}

Test(args, fmod_ret_double_return)
{
	struct seen ex = { .nr = 4 };
	struct usft_tramp_link *a, *b;
	double r;

	cr_assert_eq(usft_init(), 0);
	a = tt_attach(tr_fp, USFT_TRAMP_FMODRET, fp_override, NULL, -1, 0);
	b = tt_attach(tr_fp, USFT_TRAMP_FEXIT, record, &ex, -1, 0);
	r = tr_fp(1.5, 3, 0.25);
	cr_assert_eq(r, 4.75, "original path: %g", r);
	cr_assert_eq(ex.ctx[3], tt_dbits(4.75));
	r = tr_fp(-1.5, 3, 0.25);
	cr_assert_eq(r, -1.25, "fmod_ret returned the bits of -1.25, caller got %g", r);
	cr_assert_eq(ex.ctx[3], tt_dbits(-1.25), "fexit ctx[3] = %g", tt_bitsd(ex.ctx[3]));
	tt_detach(a);
	tt_detach(b);
}

Test(args, float_args_and_return)
{
	struct seen ex = { .nr = 3 };
	struct usft_tramp_link *l;
	float r;

	cr_assert_eq(usft_init(), 0);
	l = tt_attach(tr_fp_f, USFT_TRAMP_FEXIT, record, &ex, -1, 0);
	r = tr_fp_f(1.5f, -4.0f);
	cr_assert_eq(r, -6.0f, "tr_fp_f = %g", (double)r);
	cr_assert_eq(ex.hits, 1);
	{
		float f0, f2;
		unsigned int u0 = (unsigned int)ex.ctx[0], u2 = (unsigned int)ex.ctx[2];

		memcpy(&f0, &u0, 4);
		memcpy(&f2, &u2, 4);
		cr_assert_eq(f0, 1.5f, "ctx[0] low bits as float = %g", (double)f0);
		cr_assert_eq(f2, -6.0f, "ctx[2] low bits as float = %g", (double)f2);
	}
	tt_detach(l);
}

/* nr_args given (no model): every argument register is preserved anyway */
Test(args, double_args_nr_args_given)
{
	struct usft_tramp_link *a, *b;

	cr_assert_eq(usft_init(), 0);
	a = tt_attach(tr_fp, USFT_TRAMP_FENTRY, nop_prog, NULL, 3, 0);
	cr_assert_eq(tr_fp(1.5, 3, 0.25), 4.75);
	b = tt_attach(tr_fp, USFT_TRAMP_FEXIT, nop_prog, NULL, 3, 0);
	cr_assert_eq(tr_fp(1.5, 3, 0.25), 4.75);
	cr_assert_eq(tr_fp(-2.0, 3, 0.5), -5.5);
	tt_detach(a);
	cr_assert_eq(tr_fp(1.5, 3, 0.25), 4.75);
	tt_detach(b);
}

/* ---- variadic --------------------------------------------------------------- */

static void variadic_doubles(int mode, const char *kinds)
{
	struct seen en = { .nr = 1 }, ex = { .nr = 2 };
	struct usft_tramp_link *l[2] = { 0 };
	int nl = 0;

	cr_assert_eq(usft_init(), 0);
	if (strchr(kinds, 'e'))
		l[nl++] = tt_attach(tr_vsum, USFT_TRAMP_FENTRY, record, &en, -1, mode);
	if (strchr(kinds, 'x'))
		l[nl++] = tt_attach(tr_vsum, USFT_TRAMP_FEXIT, record, &ex, -1, mode);
	cr_assert_eq(tr_vsum(0), 0.0);
	cr_assert_eq(tr_vsum(1, 2.5), 2.5);
	cr_assert_eq(tr_vsum(3, 1.0, 2.0, 3.0), 14.0, "tr_vsum(3, ...) = %g", tr_vsum(3, 1.0, 2.0, 3.0));
	if (strchr(kinds, 'e'))
		cr_assert_eq(en.ctx[0], 3);
	if (strchr(kinds, 'x')) {
		cr_assert_eq(ex.ctx[0], 3);
		cr_assert_eq(ex.ctx[1], tt_dbits(14.0), "fexit ctx[1] = %g", tt_bitsd(ex.ctx[1]));
	}
	/* all 8 xmm argument registers */
	cr_assert_eq(tr_vsum(8, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5), 18.0);
	for (int i = 0; i < nl; i++)
		tt_detach(l[i]);
	expect_site(tr_vsum, TT_NOP5);
	cr_assert_eq(tr_vsum(3, 1.0, 2.0, 3.0), 14.0);
}

/*
 * More variadic doubles than vector registers: the rest are passed on the
 * stack, which the original reads relative to its entry rsp.  An image that
 * calls the original must give it the caller's stack arguments (the kernel
 * copies stack arguments when CALL_ORIG) or refuse the attach; it must not
 * silently change the result.
 */
static void variadic_stack(int kind, int mode)
{
	struct usft_tramp_link *l;
	double r;

	cr_assert_eq(usft_init(), 0);
	errno = 0;
	l = tt_try_attach((void *)tr_vsum, kind, nop_prog, NULL, -1, mode);
	if (!l) {
		cr_log_info("variadic kind %d: attach refused, errno %d", kind, errno);
		cr_assert_eq(errno, EOPNOTSUPP);
		return;
	}
	r = tr_vsum(10, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0);
	cr_assert_eq(r, 55.0, "tr_vsum(10 doubles, 2 on the stack) = %g, want 55: stack "
		     "arguments of a variadic call not passed to the original", r);
	r = tr_vsum(12, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0);
	cr_assert_eq(r, 36.0 + 2.0 * (9 + 10 + 11 + 12), "tr_vsum(12 doubles) = %g", r);
	tt_detach(l);
}

Test(args, variadic_stack_args_fentry)
{
	variadic_stack(USFT_TRAMP_FENTRY, 0);
}

Test(args, variadic_stack_args_fexit_jmp)
{
	variadic_stack(USFT_TRAMP_FEXIT, USFT_TRAMP_MODE_AUTO);
}

Test(args, variadic_stack_args_fexit_call)
{
	variadic_stack(USFT_TRAMP_FEXIT, USFT_TRAMP_MODE_CALL);
}

Test(args, variadic_stack_args_fmod_ret)
{
	variadic_stack(USFT_TRAMP_FMODRET, 0);
}

Test(args, variadic_doubles_fentry)
{
	variadic_doubles(USFT_TRAMP_MODE_AUTO, "e");
}

/*
 * An image that calls the original would call it from its own frame: the
 * variadic arguments on the stack would be wrong, so fexit and fmod_ret on
 * a variadic function are refused (EOPNOTSUPP) and the site is untouched.
 */
Test(args, variadic_fexit_and_fmod_ret_refused)
{
	cr_assert_eq(usft_init(), 0);
	tt_expect_fail(EOPNOTSUPP, tr_vsum, USFT_TRAMP_FEXIT, nop_prog, NULL, -1, 0);
	tt_expect_fail(EOPNOTSUPP, tr_vsum, USFT_TRAMP_FMODRET, nop_prog, NULL, -1, 0);
	tt_expect_fail(EOPNOTSUPP, tr_vsum_l, USFT_TRAMP_FEXIT, nop_prog, NULL, -1,
		       USFT_TRAMP_MODE_CALL);
	expect_site(tr_vsum, TT_NOP5);
	expect_site(tr_vsum_l, TT_NOP5);
}

static void variadic_longs(int mode, const char *kinds)
{
	struct seen en = { .nr = 1 }, ex = { .nr = 2 };
	struct usft_tramp_link *l[2] = { 0 };
	int nl = 0;
	long r;

	cr_assert_eq(usft_init(), 0);
	if (strchr(kinds, 'e'))
		l[nl++] = tt_attach(tr_vsum_l, USFT_TRAMP_FENTRY, record, &en, -1, mode);
	if (strchr(kinds, 'x'))
		l[nl++] = tt_attach(tr_vsum_l, USFT_TRAMP_FEXIT, record, &ex, -1, mode);
	r = tr_vsum_l(3, 10L, 20L, 30L);
	cr_assert_eq(r, 140, "tr_vsum_l(3, 10, 20, 30) = %ld (0x%lx), want 140: integer "
		     "variadic arguments (rsi..r9) not preserved", r, (unsigned long)r);
	r = tr_vsum_l(5, 1L, 1L, 1L, 1L, 1L);
	cr_assert_eq(r, 15, "tr_vsum_l(5, 1 x5) = %ld", r);
	r = tr_vsum_l(7, 1L, 1L, 1L, 1L, 1L, 1L, 1L);
	cr_assert_eq(r, 28, "tr_vsum_l(7, 1 x7) = %ld", r);
	for (int i = 0; i < nl; i++)
		tt_detach(l[i]);
	cr_assert_eq(tr_vsum_l(3, 10L, 20L, 30L), 140);
}

Test(args, variadic_longs_fentry)
{
	variadic_longs(USFT_TRAMP_MODE_AUTO, "e");
}


/* ---- unsupported models -------------------------------------------------- */

Test(args, seven_int_args_eopnotsupp)
{
	cr_assert_eq(usft_init(), 0);
	tt_expect_fail(EOPNOTSUPP, tr_args7, USFT_TRAMP_FENTRY, nop_prog, NULL, -1, 0);
	tt_expect_fail(EOPNOTSUPP, tr_args7, USFT_TRAMP_FEXIT, nop_prog, NULL, -1, 0);
	tt_expect_fail(EOPNOTSUPP, tr_args7, USFT_TRAMP_FMODRET, nop_prog, NULL, -1, 0);
	tt_expect_fail(EOPNOTSUPP, tr_args7, USFT_TRAMP_FENTRY, nop_prog, NULL, 7, 0);
	expect_site(tr_args7, TT_NOP5);
	cr_assert_eq(tr_args7(1, 2, 3, 4, 5, 6, 7), W6(1, 2, 3, 4, 5, 6) + 7 * 19);
}

Test(args, struct_by_value_eopnotsupp)
{
	struct tr_pair p = { 4, 2 };

	cr_assert_eq(usft_init(), 0);
	tt_expect_fail(EOPNOTSUPP, tr_struct, USFT_TRAMP_FENTRY, nop_prog, NULL, -1, 0);
	tt_expect_fail(EOPNOTSUPP, tr_struct, USFT_TRAMP_FEXIT, nop_prog, NULL, -1, 0);
	expect_site(tr_struct, TT_NOP5);
	cr_assert_eq(tr_struct(p), 42);
}

Test(args, struct_returned_in_memory_eopnotsupp)
{
	cr_assert_eq(usft_init(), 0);
	tt_expect_fail(EOPNOTSUPP, tr_ret_big, USFT_TRAMP_FEXIT, nop_prog, NULL, -1, 0);
	expect_site(tr_ret_big, TT_NOP5);
	cr_assert_eq(tr_ret_big(5).v[3], 8);
}

Test(args, long_double_eopnotsupp)
{
	cr_assert_eq(usft_init(), 0);
	tt_expect_fail(EOPNOTSUPP, tr_ldbl, USFT_TRAMP_FENTRY, nop_prog, NULL, -1, 0);
	cr_assert(tr_ldbl(1.5L) == 3.0L);
}

/* ---- ENDBR64 before the site (-fcf-protection, cet_funcs.c) ------------------- */

long tr_cet_add(long a, long b);
double tr_cet_fp(double x, long n);

static void cet(int mode, unsigned char want_site)
{
	struct seen en = { .nr = 2 }, ex = { .nr = 3 };
	struct usft_tramp_link *a, *b;
	long (*volatile ind)(long, long) = tr_cet_add;	/* indirect call: lands on the ENDBR */

	cr_assert_eq(usft_init(), 0);
	cr_assert_neq(tc_site((const void *)tr_cet_add), 0);
	a = tt_attach(tr_cet_add, USFT_TRAMP_FENTRY, record, &en, -1, mode);
	expect_site(tr_cet_add, TT_CALL);
	cr_assert_eq(ind(40, 2), 42);
	cr_assert_eq(en.ctx[0], 40);
	b = tt_attach(tr_cet_add, USFT_TRAMP_FEXIT, record, &ex, -1, mode);
	expect_site(tr_cet_add, want_site);
	cr_assert_eq(tr_cet_add(1, 2), 3);
	cr_assert_eq(ind(5, 6), 11);
	cr_assert_eq(ex.ctx[2], 11);
	cr_assert_eq(en.hits, 3);
	cr_assert_eq(ex.hits, 2);
	tt_detach(a);
	tt_detach(b);
	expect_site(tr_cet_add, TT_NOP5);

	a = tt_attach(tr_cet_fp, USFT_TRAMP_FEXIT, record, &ex, -1, mode);
	cr_assert_eq(tr_cet_fp(0.5, 3), 1.5);
	cr_assert_eq(ex.ctx[2], tt_dbits(1.5));
	tt_detach(a);
}

Test(args, endbr_site_jmp)
{
	cet(USFT_TRAMP_MODE_AUTO, TT_JMP);
}

Test(args, endbr_site_call)
{
	cet(USFT_TRAMP_MODE_CALL, TT_CALL);
}

/* ---- no DWARF ------------------------------------------------------------ */

Test(args, asm_function_enoent_then_nr_args)
{
	struct seen en = { .nr = 1 }, ex = { .nr = 2 };
	struct usft_tramp_link *a, *b;

	cr_assert_eq(usft_init(), 0);
	cr_assert_neq(tc_site((const void *)tr_asm_add3), 0, "asm function has no site");
	tt_expect_fail(ENOENT, tr_asm_add3, USFT_TRAMP_FENTRY, record, &en, -1, 0);
	tt_expect_fail(ENOENT, tr_asm_add3, USFT_TRAMP_FEXIT, record, &ex, -1, 0);
	expect_site(tr_asm_add3, TT_NOP5);
	cr_assert_eq(tr_asm_add3(4), 7);

	a = tt_attach(tr_asm_add3, USFT_TRAMP_FENTRY, record, &en, 1, 0);
	expect_site(tr_asm_add3, TT_CALL);
	cr_assert_eq(tr_asm_add3(39), 42);
	cr_assert_eq(en.ctx[0], 39);
	b = tt_attach(tr_asm_add3, USFT_TRAMP_FEXIT, record, &ex, 1, 0);
	expect_site(tr_asm_add3, TT_JMP);
	cr_assert_eq(tr_asm_add3(-10), -7);
	cr_assert_eq(en.ctx[0], (unsigned long)-10L);
	cr_assert_eq(ex.ctx[0], (unsigned long)-10L);
	cr_assert_eq((long)ex.ctx[1], -7);
	/* once the function has links, nr_args -1 joins them */
	{
		struct usft_tramp_link *c = usft_tramp_attach((void *)tr_asm_add3, USFT_TRAMP_FENTRY,
							      nop_prog, NULL, NULL);

		cr_assert_not_null(c, "nr_args -1 on a function with links: errno %d", errno);
		cr_assert_eq(tr_asm_add3(1), 4);
		tt_detach(c);
	}
	tt_detach(a);
	tt_detach(b);
	expect_site(tr_asm_add3, TT_NOP5);

	/* the gcc-style 5 x 0x90 site */
	a = tt_attach(tr_asm_sub, USFT_TRAMP_FEXIT, record, &ex, 2, 0);
	cr_assert_eq(tr_asm_sub(50, 8), 42);
	cr_assert_eq(ex.ctx[0], 50);
	cr_assert_eq(ex.ctx[1], 8);
	tt_detach(a);
	expect_site(tr_asm_sub, TT_NOP5);
}

Test(args, object_without_debug_info_enoent_then_nr_args)
{
	struct seen ex = { .nr = 3 };
	struct usft_tramp_link *a;

	cr_assert_eq(usft_init(), 0);
	cr_assert_neq(tc_site((const void *)tr_nodbg_mul), 0);
	tt_expect_fail(ENOENT, tr_nodbg_mul, USFT_TRAMP_FEXIT, record, &ex, -1, 0);
	cr_assert_eq(tr_nodbg_mul(6, 7), 43);
	a = tt_attach(tr_nodbg_mul, USFT_TRAMP_FEXIT, record, &ex, 2, 0);
	cr_assert_eq(tr_nodbg_mul(6, 7), 43);
	cr_assert_eq(ex.ctx[0], 6);
	cr_assert_eq(ex.ctx[1], 7);
	cr_assert_eq(ex.ctx[2], 43);
	tt_detach(a);
	expect_site(tr_nodbg_mul, TT_NOP5);
}

/* what usft_log() printed, for the tests of messages */
static char logged[4096];

static notrace void log_capture(enum usft_log_level level, const char *fmt, va_list ap)
{
	size_t n = strlen(logged);

	(void)level;
	if (n < sizeof(logged) - 1)
		vsnprintf(logged + n, sizeof(logged) - n, fmt, ap);
}

/* ENOENT alone reads "No such file or directory": USFT_LOG=info says why */
Test(args, no_dwarf_is_explained_at_log_level_info)
{
	struct seen ex = { .nr = 3 };

	setenv("USFT_LOG", "info", 1);	/* before anything logs: the level is read once */
	usft_set_print(log_capture);
	cr_assert_eq(usft_init(), 0);
	tt_expect_fail(ENOENT, tr_nodbg_mul, USFT_TRAMP_FEXIT, record, &ex, -1, 0);
	cr_expect(strstr(logged, "usft_tramp_attach(tr_nodbg_mul): the argument count is unknown"),
		  "log: %s", logged);
	cr_expect(strstr(logged, "no DWARF entry for it (ENOENT); build it with -g, or give "
			 "opts.nr_args"), "log: %s", logged);
}

/* ---- error codes ------------------------------------------------------------ */

Test(errors, einval)
{
	struct usft_tramp_opts o = { .sz = sizeof(o), .nr_args = 6 };
	struct usft_tramp_link *l;

	cr_assert_eq(usft_init(), 0);
	errno = 0;
	cr_assert_null(usft_tramp_attach(NULL, USFT_TRAMP_FENTRY, nop_prog, NULL, &o));
	cr_assert_eq(errno, EINVAL, "NULL func: errno %d", errno);
	errno = 0;
	cr_assert_null(usft_tramp_attach((void *)tr_args6, USFT_TRAMP_FENTRY, NULL, NULL, &o));
	cr_assert_eq(errno, EINVAL, "NULL prog: errno %d", errno);
	tt_expect_fail(EINVAL, tr_args6, (enum usft_tramp_kind)3, nop_prog, NULL, 6, 0);
	tt_expect_fail(EINVAL, tr_args6, (enum usft_tramp_kind)-1, nop_prog, NULL, 6, 0);
	tt_expect_fail(EINVAL, tr_notrace, USFT_TRAMP_FENTRY, nop_prog, NULL, 1, 0);
	tt_expect_fail(EINVAL, tr_notrace, USFT_TRAMP_FEXIT, nop_prog, NULL, -1, 0);
	tt_expect_fail(EINVAL, tr_args6, USFT_TRAMP_FENTRY, nop_prog, NULL, 6, 3);
	tt_expect_fail(EINVAL, tr_args6, USFT_TRAMP_FENTRY, nop_prog, NULL, 6, -1);
	tt_expect_fail(EINVAL, tr_args6, USFT_TRAMP_FENTRY, nop_prog, NULL, -2, 0);

	/* opts.sz too small */
	o.sz = 0;
	errno = 0;
	cr_assert_null(usft_tramp_attach((void *)tr_args6, USFT_TRAMP_FENTRY, nop_prog, NULL, &o));
	cr_assert_eq(errno, EINVAL, "opts.sz 0: errno %d", errno);
	o.sz = 4;
	errno = 0;
	cr_assert_null(usft_tramp_attach((void *)tr_args6, USFT_TRAMP_FENTRY, nop_prog, NULL, &o));
	cr_assert_eq(errno, EINVAL, "opts.sz 4: errno %d", errno);
	expect_site(tr_args6, TT_NOP5);

	/*
	 * a larger sz (newer caller, libbpf's OPTS_VALID): accepted while the
	 * bytes this library does not know are zero, refused with EINVAL and
	 * nothing attached once one of them is set
	 */
	{
		struct {
			struct usft_tramp_opts o;
			long pad;
		} big;

		memset(&big, 0, sizeof(big));
		big.o.sz = sizeof(big);
		big.o.nr_args = 6;
		l = usft_tramp_attach((void *)tr_args6, USFT_TRAMP_FENTRY, nop_prog, NULL, &big.o);
		cr_assert_not_null(l, "opts.sz larger, zero tail: errno %d", errno);
		tt_detach(l);
		expect_site(tr_args6, TT_NOP5);
		big.pad = 1;
		errno = 0;
		cr_assert_null(usft_tramp_attach((void *)tr_args6, USFT_TRAMP_FENTRY, nop_prog,
						 NULL, &big.o));
		cr_assert_eq(errno, EINVAL, "opts.sz larger, non-zero tail: errno %d", errno);
		expect_site(tr_args6, TT_NOP5);
	}

	cr_assert_eq(usft_tramp_detach(NULL), -EINVAL);
	cr_assert_eq(usft_tramp_link_misses(NULL), 0);
	expect_site(tr_args6, TT_NOP5);
	cr_assert_eq(tr_args6(1, 1, 1, 1, 1, 1), W6(1, 1, 1, 1, 1, 1));
}

/* addresses that are not functions with a site */
Test(errors, einval_not_a_site)
{
	static long data;

	cr_assert_eq(usft_init(), 0);
	tt_expect_fail(EINVAL, &data, USFT_TRAMP_FENTRY, nop_prog, NULL, 1, 0);
	tt_expect_fail(EINVAL, strlen, USFT_TRAMP_FEXIT, nop_prog, NULL, 1, 0);
	tt_expect_fail(EINVAL, usft_tramp_attach, USFT_TRAMP_FENTRY, nop_prog, NULL, 5, 0);
}
