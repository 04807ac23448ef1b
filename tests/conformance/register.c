// SPDX-License-Identifier: MIT
/*
 * register_ftrace_function() / unregister_ftrace_function(): flags, error
 * codes, SAVE_REGS (trace_selftest_function_regs), PERMANENT and the
 * ftrace_enabled switch, and what a callback sees in ftrace_regs.
 * Kernel: ftrace_ops flags (include/linux/ftrace.h), register_ftrace_function(),
 * ftrace_startup() (kernel/trace/ftrace.c), trace_selftest.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_common.h"

/* ---- traced functions ------------------------------------------------ */

unsigned long cf_reg_retaddr;	/* __builtin_return_address(0) of the last cf_reg_func1 */

TRACEE long cf_reg_func1(long x)
{
	TRACEE_BODY();
	cf_reg_retaddr = (unsigned long)__builtin_return_address(0);
	return x * 3 + 1;
}

TRACEE long cf_reg_func2(long x)
{
	TRACEE_BODY();
	return x * 5 + 2;
}

TRACEE long cf_reg_args6(long a, long b, long c, long d, long e, long f)
{
	TRACEE_BODY();
	return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f;
}

TRACEE double cf_reg_fp3(double a, double b, double c)
{
	TRACEE_BODY();
	return a * b + c;
}

/* Mixed integer and floating-point arguments. */
TRACEE double cf_reg_mixed(long i, double a, long j, double b)
{
	TRACEE_BODY();
	return (double)i * a + (double)j * b;
}

/* Two doubles by value: the psABI passes them in xmm0 and xmm1. */
struct cf_reg_dpair {
	double a, b;
};

TRACEE double cf_reg_pair(struct cf_reg_dpair p, long k)
{
	TRACEE_BODY();
	return p.a * (double)k + p.b;
}

/* Variadic: @n doubles (needs %al = number of vector registers used). */
TRACEE double cf_reg_vsum(int n, ...)
{
	va_list ap;
	double s = 0;
	int i;

	TRACEE_BODY();
	va_start(ap, n);
	for (i = 0; i < n; i++)
		s += va_arg(ap, double);
	va_end(ap);
	return s;
}

/* printf-like: formats into @out with vsnprintf, returns the length. */
TRACEE int cf_reg_vfmt(char *out, size_t len, const char *fmt, ...)
{
	va_list ap;
	int r;

	TRACEE_BODY();
	va_start(ap, fmt);
	r = vsnprintf(out, len, fmt, ap);
	va_end(ap);
	return r;
}

/* ---- callbacks --------------------------------------------------------- */

/*
 * Clobber every caller-saved register a callback may legitimately clobber:
 * the argument registers, rax (the variadic vector count, left 0 so a lost
 * %al makes va_arg(double) read garbage), r10/r11 and the xmm argument
 * registers.  The caller must have saved them.
 */
static notrace void clobber_caller_saved(void)
{
#if defined(__aarch64__)
	asm volatile("movz x0, #0x5a5a\n\t"
		     "mov x1, x0\n\t mov x2, x0\n\t mov x3, x0\n\t mov x4, x0\n\t"
		     "mov x5, x0\n\t mov x6, x0\n\t mov x7, x0\n\t mov x8, x0\n\t"
		     "mov x9, x0\n\t mov x10, x0\n\t mov x16, x0\n\t mov x17, x0\n\t"
		     "fmov d0, x0\n\t fmov d1, x0\n\t fmov d2, x0\n\t fmov d3, x0\n\t"
		     "fmov d4, x0\n\t fmov d5, x0\n\t fmov d6, x0\n\t fmov d7, x0\n\t"
		     ::: "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10",
		     "x16", "x17", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7",
		     "memory", "cc");
#else
	asm volatile("mov $0x5a5a5a5a, %%eax\n\t"
		     "mov %%rax, %%rdi\n\t"
		     "mov %%rax, %%rsi\n\t"
		     "mov %%rax, %%rdx\n\t"
		     "mov %%rax, %%rcx\n\t"
		     "mov %%rax, %%r8\n\t"
		     "mov %%rax, %%r9\n\t"
		     "mov %%rax, %%r10\n\t"
		     "mov %%rax, %%r11\n\t"
		     "movq %%rax, %%xmm0\n\t"
		     "movq %%rax, %%xmm1\n\t"
		     "movq %%rax, %%xmm2\n\t"
		     "movq %%rax, %%xmm3\n\t"
		     "movq %%rax, %%xmm4\n\t"
		     "movq %%rax, %%xmm5\n\t"
		     "movq %%rax, %%xmm6\n\t"
		     "movq %%rax, %%xmm7\n\t"
		     /* %al = 0 tells a variadic prologue to skip saving xmm0-7 */
		     "xor %%eax, %%eax\n\t"
		     ::: "rax", "rdi", "rsi", "rdx", "rcx", "r8", "r9", "r10", "r11",
		     "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
		     "memory", "cc");
#endif
}

struct frame_probe {
	struct ftrace_ops ops;
	int calls;
	unsigned long ip, parent_ip;
	struct ftrace_ops *op;
	int have_fregs;
	int have_regs;
	unsigned long regs_ip;		/* ftrace_get_regs()->ip */
	unsigned long fregs_ip;		/* ftrace_regs_get_instruction_pointer() */
	unsigned long sp_slot;		/* *(unsigned long *)ftrace_regs_get_stack_pointer() */
	unsigned long args[6];
	unsigned long fp[8];
	unsigned long regs_di;		/* regs->di when regs available */
	int clobber;
};

static notrace void frame_probe_func(unsigned long ip, unsigned long parent_ip,
				     struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct frame_probe *p = container_of(op, struct frame_probe, ops);
	struct pt_regs *regs;
	unsigned int i;

	p->calls++;
	p->ip = ip;
	p->parent_ip = parent_ip;
	p->op = op;
	p->have_fregs = fregs != NULL;
	if (fregs) {
		regs = ftrace_get_regs(fregs);
		p->have_regs = regs != NULL;
#if defined(__x86_64__)
		if (regs) {
			p->regs_ip = regs->ip;
			p->regs_di = regs->di;
		}
#endif
		p->fregs_ip = ftrace_regs_get_instruction_pointer(fregs);
		if (ftrace_regs_get_stack_pointer(fregs))
			p->sp_slot = *(unsigned long *)ftrace_regs_get_stack_pointer(fregs);
		for (i = 0; i < 6; i++)
			p->args[i] = ftrace_regs_get_argument(fregs, i);
		for (i = 0; i < 8; i++)
			p->fp[i] = usft_ftrace_regs_get_fp_argument(fregs, i);
	}
	if (p->clobber)
		clobber_caller_saved();
}

static notrace void frame_probe_init(struct frame_probe *p, unsigned long flags)
{
	cr_assert_not(p->ops.flags & FTRACE_OPS_FL_INITIALIZED, "test bug: ops reused");
	memset(p, 0, sizeof(*p));
	p->ops.func = frame_probe_func;
	p->ops.flags = flags;
}

static notrace unsigned long dbits(double d)
{
	unsigned long u;

	memcpy(&u, &d, sizeof(u));
	return u;
}

static void filter_one(struct ftrace_ops *ops, const char *name)
{
	int r = tc_set_filter(ops, name, 1);

	cr_assert_eq(r, 0, "ftrace_set_filter(%s) = %d", name, r);
}

/* ---- basic register / unregister --------------------------------------- */

Test(register_ftrace_function, patches_calls_and_unregisters)
{
	static struct tc_counter c;
	unsigned long site = tc_site(cf_reg_func1);
	long before;

	cr_assert_eq(usft_init(), 0);
	cr_assert_neq(site, 0, "cf_reg_func1 has no site");
	expect_nop5(cf_reg_func1);
	expect_nop5(cf_reg_func2);

	tc_counter_init(&c, 0);
	filter_one(&c.ops, "cf_reg_func1");
	expect_nop5(cf_reg_func1);	/* setting a filter patches nothing */
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	cr_assert(c.ops.flags & FTRACE_OPS_FL_ENABLED, "ENABLED not set while registered");
	expect_call(cf_reg_func1);
	expect_nop5(cf_reg_func2);

	cr_assert_eq(cf_reg_func1(4), 13);
	cr_assert_eq(tc_count(&c), 1);
	cr_assert_eq(atomic_load(&c.last_ip), site, "ip %#lx != site %#lx",
		     atomic_load(&c.last_ip), site);
	cr_assert_eq(atomic_load(&c.last_parent), cf_reg_retaddr,
		     "parent_ip %#lx != return address %#lx",
		     atomic_load(&c.last_parent), cf_reg_retaddr);
	cr_assert_eq(cf_reg_func2(4), 22);
	cr_assert_eq(tc_count(&c), 1, "unselected function reached the callback");

	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	cr_assert_not(c.ops.flags & FTRACE_OPS_FL_ENABLED, "ENABLED still set after unregister");
	expect_nop5(cf_reg_func1);
	before = tc_count(&c);
	cr_assert_eq(cf_reg_func1(1), 4);
	cr_assert_eq(tc_count(&c), before, "callback ran after unregister");
}

Test(register_ftrace_function, rejects_double_registration)
{
	static struct tc_counter c;

	tc_counter_init(&c, 0);
	filter_one(&c.ops, "cf_reg_func1");
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	errno = 0;
	cr_assert_eq(register_ftrace_function(&c.ops), -EBUSY);
	cr_assert_eq(errno, EBUSY);
	/* still registered exactly once */
	expect_call(cf_reg_func1);
	cf_reg_func1(0);
	cr_assert_eq(tc_count(&c), 1);
	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	expect_nop5(cf_reg_func1);
	errno = 0;
	cr_assert_eq(unregister_ftrace_function(&c.ops), -EBUSY);
	cr_assert_eq(errno, EBUSY);
}

Test(unregister_ftrace_function, rejects_never_registered_ops)
{
	static struct tc_counter c;

	tc_counter_init(&c, 0);
	errno = 0;
	cr_assert_eq(unregister_ftrace_function(&c.ops), -EBUSY);
	cr_assert_eq(errno, EBUSY);
	filter_one(&c.ops, "cf_reg_func1");
	cr_assert_eq(unregister_ftrace_function(&c.ops), -EBUSY);
	expect_nop5(cf_reg_func1);
}

Test(register_ftrace_function, reregisters_after_unregister)
{
	static struct tc_counter c;
	int i;

	tc_counter_init(&c, 0);
	filter_one(&c.ops, "cf_reg_func1");
	for (i = 0; i < 5; i++) {
		cr_assert_eq(register_ftrace_function(&c.ops), 0, "cycle %d", i);
		expect_call(cf_reg_func1);
		cf_reg_func1(i);
		cr_assert_eq(tc_count(&c), i + 1);
		cr_assert_eq(unregister_ftrace_function(&c.ops), 0, "cycle %d", i);
		expect_nop5(cf_reg_func1);
		cf_reg_func1(i);
		cr_assert_eq(tc_count(&c), i + 1);
	}
}

Test(register_ftrace_function, rejects_deleted_ops)
{
	static struct tc_counter c;

	tc_counter_init(&c, FTRACE_OPS_FL_DELETED);
	filter_one(&c.ops, "cf_reg_func1");
	errno = 0;
	cr_assert_eq(register_ftrace_function(&c.ops), -EINVAL);
	cr_assert_eq(errno, EINVAL);
	cr_assert_not(c.ops.flags & FTRACE_OPS_FL_ENABLED);
	expect_nop5(cf_reg_func1);
}

Test(register_ftrace_function, marks_heap_ops_dynamic)
{
	struct tc_counter *c = calloc(1, sizeof(*c));

	cr_assert_not_null(c);
	tc_counter_init(c, 0);
	filter_one(&c->ops, "cf_reg_func1");
	cr_assert_eq(register_ftrace_function(&c->ops), 0);
	cr_assert(c->ops.flags & FTRACE_OPS_FL_DYNAMIC,
		  "heap ops not marked FTRACE_OPS_FL_DYNAMIC (flags %#lx)", c->ops.flags);
	cf_reg_func1(1);
	cr_assert_eq(tc_count(c), 1);
	cr_assert_eq(unregister_ftrace_function(&c->ops), 0);
	expect_nop5(cf_reg_func1);
	ftrace_free_filter(&c->ops);
	free(c);
	cr_assert_eq(cf_reg_func1(1), 4);
}

/* ---- what the callback sees ------------------------------------------- */

Test(register_ftrace_function, callback_sees_site_parent_and_frame)
{
	static struct frame_probe p;
	unsigned long site = tc_site(cf_reg_func1);

	frame_probe_init(&p, 0);
	filter_one(&p.ops, "cf_reg_func1");
	cr_assert_eq(register_ftrace_function(&p.ops), 0);
	cr_assert_eq(cf_reg_func1(7), 22);
	cr_assert_eq(p.calls, 1);
	cr_assert_eq(p.ip, site);
	cr_assert_eq(p.op, &p.ops);
	cr_assert_eq(p.parent_ip, cf_reg_retaddr);
	cr_assert(p.have_fregs, "fregs is NULL");
	cr_assert_not(p.have_regs, "ftrace_get_regs() != NULL for an ops without SAVE_REGS");
	cr_assert_eq(p.fregs_ip, site + TC_SITE_SIZE,
		     "ftrace_regs_get_instruction_pointer %#lx != site+5 %#lx",
		     p.fregs_ip, site + TC_SITE_SIZE);
#if defined(__x86_64__)
	cr_assert_eq(p.sp_slot, cf_reg_retaddr,
		     "stack pointer does not address the caller's return slot");
#endif
	cr_assert_eq(p.args[0], 7);
	cr_assert_eq(unregister_ftrace_function(&p.ops), 0);
}

#if defined(__x86_64__)	/* arm64 has WITH_ARGS only: no pt_regs */
Test(trace_selftest_function_regs, save_regs_gives_full_regs)
{
	static struct frame_probe p;
	unsigned long site = tc_site(cf_reg_func1);

	frame_probe_init(&p, FTRACE_OPS_FL_SAVE_REGS);
	filter_one(&p.ops, "cf_reg_func1");
	cr_assert_eq(register_ftrace_function(&p.ops), 0, "SAVE_REGS must register on x86-64");
	expect_call(cf_reg_func1);
	cr_assert_eq(cf_reg_func1(9), 28);
	cr_assert_eq(p.calls, 1);
	cr_assert(p.have_regs, "SAVE_REGS ops got ftrace_get_regs() == NULL");
	cr_assert_eq(p.regs_ip, site + TC_SITE_SIZE, "regs->ip %#lx != site+5 %#lx",
		     p.regs_ip, site + TC_SITE_SIZE);
	cr_assert_eq(p.regs_di, 9);
	cr_assert_eq(p.args[0], 9);
	cr_assert_eq(p.parent_ip, cf_reg_retaddr);
	cr_assert_eq(p.sp_slot, cf_reg_retaddr);
	cr_assert_eq(unregister_ftrace_function(&p.ops), 0);
	expect_nop5(cf_reg_func1);
}
#endif

Test(trace_selftest_function_regs, save_regs_if_supported_registers)
{
	static struct frame_probe p, q;

	/* SAVE_REGS | SAVE_REGS_IF_SUPPORTED: supported here, so regs are full. */
	frame_probe_init(&p, FTRACE_OPS_FL_SAVE_REGS | FTRACE_OPS_FL_SAVE_REGS_IF_SUPPORTED);
	filter_one(&p.ops, "cf_reg_func1");
	cr_assert_eq(register_ftrace_function(&p.ops), 0);
	cf_reg_func1(1);
	cr_assert_eq(p.calls, 1);
#if defined(__x86_64__)
	cr_assert(p.have_regs, "SAVE_REGS|SAVE_REGS_IF_SUPPORTED got NULL regs on x86-64");
#endif
	cr_assert_eq(unregister_ftrace_function(&p.ops), 0);

	/* SAVE_REGS_IF_SUPPORTED alone is accepted (regs are optional). */
	frame_probe_init(&q, FTRACE_OPS_FL_SAVE_REGS_IF_SUPPORTED);
	filter_one(&q.ops, "cf_reg_func2");
	cr_assert_eq(register_ftrace_function(&q.ops), 0);
	expect_call(cf_reg_func2);
	cr_assert_eq(cf_reg_func2(1), 7);
	cr_assert_eq(q.calls, 1);
	cr_assert_eq(q.args[0], 1);
	cr_assert_eq(unregister_ftrace_function(&q.ops), 0);
	expect_nop5(cf_reg_func2);
}

Test(ftrace_regs_get_argument, reads_six_integer_arguments)
{
	static struct frame_probe p;
	long r;

	frame_probe_init(&p, 0);
	p.clobber = 1;
	filter_one(&p.ops, "cf_reg_args6");
	cr_assert_eq(register_ftrace_function(&p.ops), 0);
	r = cf_reg_args6(0x1111, -2, 0x3333333333L, 4, 0x7fffffffffffffffL / 64, -6);
	cr_assert_eq(r, 0x1111 + 2 * -2 + 3 * 0x3333333333L + 4 * 4 +
			5 * (0x7fffffffffffffffL / 64) + 6 * -6,
		     "traced function computed a wrong result: args not preserved");
	cr_assert_eq(p.calls, 1);
	cr_assert_eq(p.args[0], 0x1111UL);
	cr_assert_eq(p.args[1], (unsigned long)-2L);
	cr_assert_eq(p.args[2], 0x3333333333UL);
	cr_assert_eq(p.args[3], 4UL);
	cr_assert_eq(p.args[4], 0x7fffffffffffffffUL / 64);
	cr_assert_eq(p.args[5], (unsigned long)-6L);
	cr_assert_eq(unregister_ftrace_function(&p.ops), 0);
}

Test(ftrace_regs_get_argument, save_regs_path_reads_arguments)
{
	static struct frame_probe p;
	long r;

	frame_probe_init(&p, FTRACE_OPS_FL_SAVE_REGS);
	p.clobber = 1;
	filter_one(&p.ops, "cf_reg_args6");
	cr_assert_eq(register_ftrace_function(&p.ops), 0);
	r = cf_reg_args6(1, 2, 3, 4, 5, 6);
	cr_assert_eq(r, 1 + 4 + 9 + 16 + 25 + 36);
	for (int i = 0; i < 6; i++)
		cr_assert_eq(p.args[i], (unsigned long)(i + 1), "arg %d", i);
	cr_assert_eq(unregister_ftrace_function(&p.ops), 0);
}

Test(usft_ftrace_regs_get_fp_argument, preserves_and_reads_xmm_arguments)
{
	static struct frame_probe p;
	double r;

	frame_probe_init(&p, 0);
	p.clobber = 1;
	filter_one(&p.ops, "cf_reg_fp3");
	cr_assert_eq(register_ftrace_function(&p.ops), 0);
	expect_call(cf_reg_fp3);
	r = cf_reg_fp3(1.5, -2.25, 100.125);
	cr_assert_eq(r, 1.5 * -2.25 + 100.125, "xmm arguments not preserved: %g", r);
	cr_assert_eq(p.calls, 1);
	cr_assert_eq(p.fp[0], dbits(1.5));
	cr_assert_eq(p.fp[1], dbits(-2.25));
	cr_assert_eq(p.fp[2], dbits(100.125));
	cr_assert_eq(unregister_ftrace_function(&p.ops), 0);
}

Test(usft_ftrace_regs_get_fp_argument, mixed_integer_and_fp_arguments)
{
	static struct frame_probe p;
	double r;

	frame_probe_init(&p, FTRACE_OPS_FL_SAVE_REGS);
	p.clobber = 1;
	filter_one(&p.ops, "cf_reg_mixed");
	cr_assert_eq(register_ftrace_function(&p.ops), 0);
	r = cf_reg_mixed(3, 0.5, -7, 0.25);
	cr_assert_eq(r, 3 * 0.5 + -7 * 0.25);
	cr_assert_eq(p.args[0], 3UL);
	cr_assert_eq(p.args[1], (unsigned long)-7L);
	cr_assert_eq(p.fp[0], dbits(0.5));
	cr_assert_eq(p.fp[1], dbits(0.25));
	cr_assert_eq(unregister_ftrace_function(&p.ops), 0);
}

Test(register_ftrace_function, variadic_functions_work_while_traced)
{
	static struct frame_probe p, pr;
	char buf[128];
	int n;

	frame_probe_init(&p, 0);
	p.clobber = 1;
	filter_one(&p.ops, "cf_reg_v*");
	cr_assert_eq(register_ftrace_function(&p.ops), 0);
	expect_call(cf_reg_vsum);
	expect_call(cf_reg_vfmt);

	cr_assert_eq(cf_reg_vsum(0), 0.0);
	cr_assert_eq(cf_reg_vsum(3, 1.0, 2.5, -0.5), 3.0);
	cr_assert_eq(cf_reg_vsum(10, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0), 55.0);
	n = cf_reg_vfmt(buf, sizeof(buf), "%d %.3f %s %ld %.1f %.2f %.1f %.1f %.1f %.1f %.1f",
			42, 3.25, "x", -9L, 1.5, 2.75, 3.0, 4.0, 5.0, 6.0, 7.0);
	cr_assert_str_eq(buf, "42 3.250 x -9 1.5 2.75 3.0 4.0 5.0 6.0 7.0");
	cr_assert_eq(n, (int)strlen(buf));
	cr_assert_eq(p.calls, 4);

	/* same with the regs-saving path */
	cr_assert_eq(unregister_ftrace_function(&p.ops), 0);
	frame_probe_init(&pr, FTRACE_OPS_FL_SAVE_REGS);
	pr.clobber = 1;
	filter_one(&pr.ops, "cf_reg_v*");
	cr_assert_eq(register_ftrace_function(&pr.ops), 0);
	cr_assert_eq(cf_reg_vsum(4, 0.25, 0.25, 0.25, 0.25), 1.0);
	cf_reg_vfmt(buf, sizeof(buf), "%.2f|%.2f", 1.0 / 4, 10.0);
	cr_assert_str_eq(buf, "0.25|10.00");
	cr_assert_eq(pr.calls, 2);
#if defined(__x86_64__)
	cr_assert(pr.have_regs);
#endif
	cr_assert_eq(unregister_ftrace_function(&pr.ops), 0);
}

/* A callback may use SSE with aligned stack slots: the stack is ABI-aligned. */
typedef float tc_v4sf __attribute__((vector_size(16)));
static volatile float aligned_sink;

static notrace void aligned_stack_func(unsigned long ip, unsigned long parent_ip,
				       struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct tc_counter *c = container_of(op, struct tc_counter, ops);
	volatile tc_v4sf v = { 1, 2, 3, 4 };	/* movaps to/from the stack */
	tc_v4sf w = v;

	aligned_sink = w[0] + w[3];
	atomic_fetch_add(&c->count, 1);
}

Test(register_ftrace_function, callback_runs_on_aligned_stack)
{
	static struct tc_counter c, d;

	tc_counter_init(&c, 0);
	c.ops.func = aligned_stack_func;
	tc_counter_init(&d, FTRACE_OPS_FL_SAVE_REGS);
	d.ops.func = aligned_stack_func;
	filter_one(&c.ops, "cf_reg_func1");
	filter_one(&d.ops, "cf_reg_func2");
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	cr_assert_eq(register_ftrace_function(&d.ops), 0);
	cf_reg_func1(1);
	cf_reg_func2(1);
	cr_assert_eq(tc_count(&c), 1);
	cr_assert_eq(tc_count(&d), 1);
	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	cr_assert_eq(unregister_ftrace_function(&d.ops), 0);
}

/* ---- PERMANENT and ftrace_enabled ------------------------------------- */

Test(usft_set_ftrace_enabled, permanent_ops_rules)
{
	static struct tc_counter c;

	cr_assert_eq(usft_get_ftrace_enabled(), 1);
	tc_counter_init(&c, FTRACE_OPS_FL_PERMANENT);
	filter_one(&c.ops, "cf_reg_func1");

	cr_assert_eq(usft_set_ftrace_enabled(0), 0);
	cr_assert_eq(usft_get_ftrace_enabled(), 0);
	errno = 0;
	cr_assert_eq(register_ftrace_function(&c.ops), -EBUSY,
		     "PERMANENT ops registered while ftrace_enabled == 0");
	cr_assert_eq(errno, EBUSY);
	cr_assert_not(c.ops.flags & FTRACE_OPS_FL_ENABLED);
	expect_nop5(cf_reg_func1);

	cr_assert_eq(usft_set_ftrace_enabled(1), 0);
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	expect_call(cf_reg_func1);
	errno = 0;
	cr_assert_eq(usft_set_ftrace_enabled(0), -EBUSY,
		     "ftrace_enabled turned off under a PERMANENT ops");
	cr_assert_eq(errno, EBUSY);
	cr_assert_eq(usft_get_ftrace_enabled(), 1);
	expect_call(cf_reg_func1);
	cf_reg_func1(0);
	cr_assert_eq(tc_count(&c), 1);

	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	expect_nop5(cf_reg_func1);
	cr_assert_eq(usft_set_ftrace_enabled(0), 0);
	cr_assert_eq(usft_set_ftrace_enabled(1), 0);
}

Test(usft_set_ftrace_enabled, registration_while_disabled_patches_nothing)
{
	static struct tc_counter c;

	tc_counter_init(&c, 0);
	filter_one(&c.ops, "cf_reg_func1");
	cr_assert_eq(usft_set_ftrace_enabled(0), 0);
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	cr_assert(c.ops.flags & FTRACE_OPS_FL_ENABLED);
	expect_nop5(cf_reg_func1);
	cf_reg_func1(1);
	cr_assert_eq(tc_count(&c), 0, "callback ran while ftrace_enabled == 0");

	cr_assert_eq(usft_set_ftrace_enabled(1), 0);
	expect_call(cf_reg_func1);
	expect_nop5(cf_reg_func2);
	cf_reg_func1(1);
	cr_assert_eq(tc_count(&c), 1);

	/* turning it off again NOPs the site but keeps the ops registered */
	cr_assert_eq(usft_set_ftrace_enabled(0), 0);
	expect_nop5(cf_reg_func1);
	cr_assert(c.ops.flags & FTRACE_OPS_FL_ENABLED);
	cf_reg_func1(1);
	cr_assert_eq(tc_count(&c), 1);
	cr_assert_eq(usft_set_ftrace_enabled(1), 0);
	expect_call(cf_reg_func1);
	cf_reg_func1(1);
	cr_assert_eq(tc_count(&c), 2);

	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	expect_nop5(cf_reg_func1);
}

Test(usft_set_ftrace_enabled, unregister_while_disabled)
{
	static struct tc_counter c;

	tc_counter_init(&c, 0);
	filter_one(&c.ops, "cf_reg_func1");
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	expect_call(cf_reg_func1);
	cr_assert_eq(usft_set_ftrace_enabled(0), 0);
	expect_nop5(cf_reg_func1);
	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	cr_assert_not(c.ops.flags & FTRACE_OPS_FL_ENABLED);
	cr_assert_eq(usft_set_ftrace_enabled(1), 0);
	expect_nop5(cf_reg_func1);
	cf_reg_func1(1);
	cr_assert_eq(tc_count(&c), 0);
}

/* ---- x86-64: the per-ops copy without xmm saves (novec_tramp) ----------- */

#if defined(__x86_64__)
static void filter_add(struct ftrace_ops *ops, const char *name)
{
	int r = tc_set_filter(ops, name, 0);

	cr_assert_eq(r, 0, "ftrace_set_filter(%s) = %d", name, r);
}

/* one clobbering ops on an integer, a double, a struct-of-doubles and a variadic function */
static void novec_register(struct frame_probe *p)
{
	frame_probe_init(p, 0);
	p->clobber = 1;
	filter_one(&p->ops, "cf_reg_args6");
	filter_add(&p->ops, "cf_reg_fp3");
	filter_add(&p->ops, "cf_reg_pair");
	filter_add(&p->ops, "cf_reg_vsum");
	cr_assert_eq(register_ftrace_function(&p->ops), 0);
}

static void novec_calls_are_right(void)
{
	cr_assert_eq(cf_reg_args6(1, 2, 3, 4, 5, 6), 1 + 4 + 9 + 16 + 25 + 36);
	cr_assert_eq(cf_reg_fp3(1.5, -2.25, 100.125), 1.5 * -2.25 + 100.125);
	cr_assert_eq(cf_reg_pair((struct cf_reg_dpair){ 1.5, 0.25 }, 3), 4.75,
		     "xmm0/xmm1 of a struct of doubles not preserved");
	cr_assert_eq(cf_reg_vsum(3, 1.0, 2.5, -0.5), 3.0);
}

Test(ops_trampoline, a_function_without_vector_arguments_calls_the_copy_without_xmm_saves)
{
	static struct frame_probe p;
	unsigned long t_int, t_fp;

	novec_register(&p);
	/* first what the program sees: every argument where it belongs */
	novec_calls_are_right();
	t_int = tc_call_target((const void *)cf_reg_args6);
	t_fp = tc_call_target((const void *)cf_reg_fp3);
	cr_assert(t_int && t_fp);
	cr_assert_neq(t_int, t_fp, "an integer-only function calls the copy that saves xmm0-7");
	/* anything the psABI may pass in xmm registers keeps the saves */
	cr_assert_eq(tc_call_target((const void *)cf_reg_pair), t_fp, "struct of doubles");
	cr_assert_eq(tc_call_target((const void *)cf_reg_vsum), t_fp, "variadic");
	/* the callback saw each call and its integer arguments */
	cr_assert_eq(p.calls, 4);
	cr_assert_eq(p.args[0], 3UL);	/* the last call: cf_reg_vsum(3, ...) */
	cr_assert_eq(unregister_ftrace_function(&p.ops), 0);
	cr_assert_eq(cf_reg_args6(1, 1, 1, 1, 1, 1), 21);
	cr_assert_eq(p.calls, 4);
}

Test(ops_trampoline, novec_tramp_off_gives_every_site_the_copy_with_xmm_saves)
{
	static struct frame_probe p;
	unsigned long t;

	cr_assert_eq(usft_set_option("novec_tramp", "0"), 0);
	novec_register(&p);
	t = tc_call_target((const void *)cf_reg_fp3);
	cr_assert_neq(t, 0);
	cr_assert_eq(tc_call_target((const void *)cf_reg_args6), t);
	cr_assert_eq(tc_call_target((const void *)cf_reg_pair), t);
	novec_calls_are_right();
	cr_assert_eq(p.calls, 4);
	cr_assert_eq(unregister_ftrace_function(&p.ops), 0);
}
#endif
