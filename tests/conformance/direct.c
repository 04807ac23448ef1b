// SPDX-License-Identifier: MIT
/*
 * Direct calls, one function per ops: register_ftrace_direct() /
 * unregister_ftrace_direct() error codes, the one-direct-per-function rule,
 * the four ftrace-direct.tc interleavings with a normal ops, jmp mode, out
 * of range trampolines (reached through ftrace_regs_caller's orig_ax path)
 * and the IPMODIFY handshake (ops_func).
 * Kernel: register_ftrace_direct(), direct_functions, ops_func / enum
 * ftrace_ops_cmd, prepare_direct_functions_for_ipmodify() (kernel/trace/ftrace.c),
 * test.d/direct/ftrace-direct.tc.
 * Trampolines: direct_tramps.S.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <usft/fgraph.h>
#include "test_common.h"

/* ---- trampolines (direct_tramps.S) and their C helpers ------------------ */

extern const char tramp_a[], tramp_b[], tramp_jmp[];
extern const char far_tramp_start[], far_tramp_slot[], far_tramp_end[];
extern unsigned long direct_jmp_body;

#define TA ((unsigned long)tramp_a)
#define TB ((unsigned long)tramp_b)
#define TJ ((unsigned long)tramp_jmp)

struct hit {
	atomic_long n;
	_Atomic unsigned long arg0;
	_Atomic unsigned long ret;	/* call mode: site + 5; jmp mode: caller's */
};
static struct hit hit_a, hit_b, hit_j;

void direct_hit_a(unsigned long arg0, unsigned long ret);
void direct_hit_b(unsigned long arg0, unsigned long ret);
void direct_hit_jmp(unsigned long arg0, unsigned long ret);

/* a trampoline that failed to save an argument register shows in the result */
static notrace void clobber_args(void)
{
#if defined(__aarch64__)
	asm volatile("mov x0, #0x5a5a\n\tmov x1, x0\n\tmov x2, x0\n\tmov x3, x0\n\t"
		     "mov x4, x0\n\tmov x5, x0\n\tmov x6, x0\n\tmov x7, x0\n\tmov x8, x0"
		     ::: "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "memory");
#else
	asm volatile("mov $0x5a5a5a5a, %%eax\n\t"
		     "mov %%rax, %%rdi\n\tmov %%rax, %%rsi\n\tmov %%rax, %%rdx\n\t"
		     "mov %%rax, %%rcx\n\tmov %%rax, %%r8\n\tmov %%rax, %%r9\n\t"
		     ::: "rax", "rdi", "rsi", "rdx", "rcx", "r8", "r9", "memory", "cc");
#endif
}

/*
 * Helper frames misaligned: the ABI says rsp = 0 mod 16 at a call, so the
 * helper's frame address (pushed rbp) is 0 mod 16 when the trampoline was
 * entered with the stack the kernel convention promises (call mode: 0 mod 16
 * with [rsp] = site + 5; jmp mode: 8 mod 16 with [rsp] = caller's return).
 */
static atomic_long misaligned;

static notrace void hit(struct hit *h, unsigned long arg0, unsigned long ret)
{
	if ((unsigned long)__builtin_frame_address(0) & 15)
		atomic_fetch_add(&misaligned, 1);
	atomic_store(&h->arg0, arg0);
	atomic_store(&h->ret, ret);
	atomic_fetch_add(&h->n, 1);
	clobber_args();
}

notrace void direct_hit_a(unsigned long arg0, unsigned long ret) { hit(&hit_a, arg0, ret); }
notrace void direct_hit_b(unsigned long arg0, unsigned long ret) { hit(&hit_b, arg0, ret); }
notrace void direct_hit_jmp(unsigned long arg0, unsigned long ret) { hit(&hit_j, arg0, ret); }

static notrace long nhits(struct hit *h)
{
	return atomic_load(&h->n);
}

/* ---- traced functions: 1..6 arguments, every argument in the result ---- */

#define E1(a) ((a) * 3 + 1)
#define E2(a, b) (E1(a) + (b) * 5)
#define E3(a, b, c) (E2(a, b) + (c) * 7)
#define E4(a, b, c, d) (E3(a, b, c) + (d) * 11)
#define E5(a, b, c, d, e) (E4(a, b, c, d) + (e) * 13)
#define E6(a, b, c, d, e, f) (E5(a, b, c, d, e) + (f) * 17)

TRACEE long dt_f1(long a) { TRACEE_BODY(); return E1(a); }
TRACEE long dt_f2(long a, long b) { TRACEE_BODY(); return E2(a, b); }
TRACEE long dt_f3(long a, long b, long c) { TRACEE_BODY(); return E3(a, b, c); }
TRACEE long dt_f4(long a, long b, long c, long d) { TRACEE_BODY(); return E4(a, b, c, d); }
TRACEE long dt_f5(long a, long b, long c, long d, long e)
{
	TRACEE_BODY();
	return E5(a, b, c, d, e);
}
TRACEE long dt_f6(long a, long b, long c, long d, long e, long f)
{
	TRACEE_BODY();
	return E6(a, b, c, d, e, f);
}

/* argument i of call k: distinct per register, so a swap shows too */
#define V(k, i) ((long)(k) * 1000 + (i) * 37 + 1)

/* one call of dt_f6 with arguments from @k; asserts the result */
#define CALL6(k)                                                               \
	do {                                                                   \
		long _k = (k);                                                 \
		long _r = dt_f6(V(_k, 0), V(_k, 1), V(_k, 2), V(_k, 3),        \
				V(_k, 4), V(_k, 5));                           \
		cr_assert_eq(_r, E6(V(_k, 0), V(_k, 1), V(_k, 2), V(_k, 3),    \
				    V(_k, 4), V(_k, 5)),                       \
			     "dt_f6(k=%ld) = %ld: an argument was clobbered",  \
			     _k, _r);                                          \
	} while (0)

/* every traced function once, results checked (others must be untouched) */
static void call_all(long k)
{
	cr_assert_eq(dt_f1(V(k, 0)), E1(V(k, 0)));
	cr_assert_eq(dt_f2(V(k, 0), V(k, 1)), E2(V(k, 0), V(k, 1)));
	cr_assert_eq(dt_f3(V(k, 0), V(k, 1), V(k, 2)), E3(V(k, 0), V(k, 1), V(k, 2)));
	cr_assert_eq(dt_f4(V(k, 0), V(k, 1), V(k, 2), V(k, 3)),
		     E4(V(k, 0), V(k, 1), V(k, 2), V(k, 3)));
	cr_assert_eq(dt_f5(V(k, 0), V(k, 1), V(k, 2), V(k, 3), V(k, 4)),
		     E5(V(k, 0), V(k, 1), V(k, 2), V(k, 3), V(k, 4)));
	CALL6(k);
}

/* ---- site bytes --------------------------------------------------------- */

/* e8 (arm64: BL) straight to the direct trampoline */
#define expect_direct(fn, tramp)                                               \
	do {                                                                   \
		expect_call(fn);                                               \
		cr_assert_eq(tc_call_target((const void *)(fn)), (tramp),      \
			     "site of %s calls %#lx, not the direct tramp %#lx", \
			     #fn, tc_call_target((const void *)(fn)),          \
			     (unsigned long)(tramp));                          \
	} while (0)

#if defined(__aarch64__)
/*
 * arm64 has no jmp mode: a jmp-marked direct address is called like any
 * other (docs/arm64.md), so "jmp straight to the trampoline" is a BL to it.
 */
#define expect_jmp(fn, tramp) expect_direct(fn, tramp)
#else
/* e9 straight to the direct trampoline */
#define expect_jmp(fn, tramp)                                                  \
	do {                                                                   \
		unsigned char _b[TC_SITE_SIZE];                                \
		char _s[32];                                                   \
		tc_read_site((const void *)(fn), _b);                          \
		cr_assert(_b[0] == 0xe9, "site of %s: expected jmp e9, got %s", \
			  #fn, tc_fmt_bytes(_b, TC_SITE_SIZE, _s));            \
		cr_assert_eq(tc_branch_target((const void *)(fn), 0xe9), (tramp), \
			     "site of %s jumps to %#lx, not %#lx", #fn,        \
			     tc_branch_target((const void *)(fn), 0xe9),          \
			     (unsigned long)(tramp));                          \
	} while (0)
#endif

/* e8 to something that is not the direct trampoline (a caller) */
#define expect_not_direct(fn, tramp)                                           \
	do {                                                                   \
		expect_call(fn);                                               \
		cr_assert_neq(tc_call_target((const void *)(fn)), (tramp),     \
			      "site of %s calls the direct tramp straight "    \
			      "although it is shared / out of reach", #fn);    \
		cr_assert_neq(tc_call_target((const void *)(fn)), 0);          \
	} while (0)

static void expect_all_nop5(void)
{
	expect_nop5(dt_f1);
	expect_nop5(dt_f2);
	expect_nop5(dt_f3);
	expect_nop5(dt_f4);
	expect_nop5(dt_f5);
	expect_nop5(dt_f6);
}

static void filter_ip(struct ftrace_ops *ops, const void *fn)
{
	int r = ftrace_set_filter_ip(ops, (unsigned long)fn, 0, 0);

	cr_assert_eq(r, 0, "ftrace_set_filter_ip() = %d", r);
}

static void filter(struct ftrace_ops *ops, const char *g)
{
	int r = tc_set_filter(ops, g, 1);

	cr_assert_eq(r, 0, "ftrace_set_filter(%s) = %d", g, r);
}

#define expect_err(call, e)                                                    \
	do {                                                                   \
		errno = 0;                                                     \
		int _r = (call);                                               \
		cr_assert_eq(_r, (e), "%s = %d, expected %d", #call, _r, (e)); \
		cr_assert_eq(errno, -(e), "%s: errno %d", #call, errno);       \
	} while (0)

/* ---- register / unregister ---------------------------------------------- */

Test(register_ftrace_direct, einval_cases)
{
	static struct ftrace_ops untouched, with_func, empty, ok;

	cr_assert_eq(usft_init(), 0);

	/* never initialised by a filter call: not INITIALIZED */
	expect_err(register_ftrace_direct(&untouched, TA), -EINVAL);
	cr_assert_not(untouched.flags & FTRACE_OPS_FL_ENABLED);

	/* func already set */
	with_func.func = tc_counter_func;
	filter_ip(&with_func, dt_f6);
	expect_err(register_ftrace_direct(&with_func, TA), -EINVAL);
	cr_assert_not(with_func.flags & FTRACE_OPS_FL_ENABLED);

	/* initialised but the filter is empty again */
	filter_ip(&empty, dt_f6);
	cr_assert_eq(ftrace_set_filter_ip(&empty, (unsigned long)dt_f6, 1, 0), 0);
	cr_assert(empty.flags & FTRACE_OPS_FL_INITIALIZED);
	expect_err(register_ftrace_direct(&empty, TA), -EINVAL);

	/* addr 0, NULL ops */
	filter_ip(&ok, dt_f6);
	expect_err(register_ftrace_direct(&ok, 0), -EINVAL);
	expect_err(register_ftrace_direct(NULL, TA), -EINVAL);
	expect_all_nop5();
	call_all(1);
	cr_assert_eq(nhits(&hit_a), 0);
	cr_assert_eq(tc_stat().nr_enabled, 0);

	/* and the good one works; a second register while ENABLED is refused */
	cr_assert_eq(register_ftrace_direct(&ok, TA), 0);
	expect_err(register_ftrace_direct(&ok, TA), -EINVAL);
	expect_direct(dt_f6, TA);
	CALL6(2);
	cr_assert_eq(nhits(&hit_a), 1);
	cr_assert_eq(unregister_ftrace_direct(&ok, TA, true), 0);
	expect_all_nop5();
}

Test(register_ftrace_direct, patches_the_site_to_the_trampoline)
{
	static struct ftrace_ops d;
	unsigned long site = tc_site(dt_f6);
	struct usft_stats st;

	cr_assert_eq(usft_init(), 0);
	cr_assert_neq(site, 0);
	filter_ip(&d, dt_f6);
	expect_nop5(dt_f6);	/* a filter patches nothing */

	cr_assert_eq(register_ftrace_direct(&d, TA), 0);
	cr_assert_eq(d.flags & (FTRACE_OPS_FL_DIRECT | FTRACE_OPS_FL_SAVE_REGS),
		     FTRACE_OPS_FL_DIRECT | FTRACE_OPS_FL_SAVE_REGS,
		     "flags %#lx lack DIRECT|SAVE_REGS", d.flags);
	cr_assert(d.flags & FTRACE_OPS_FL_ENABLED);
	cr_assert(d.flags & FTRACE_OPS_FL_INITIALIZED);
	cr_assert_eq(d.direct_call, TA);
	expect_direct(dt_f6, TA);
	expect_nop5(dt_f1);
	expect_nop5(dt_f5);
	st = tc_stat();
	cr_assert_eq(st.nr_enabled, 1);
	cr_assert_eq(st.nr_direct_in_range, 1);
	cr_assert_eq(st.nr_direct_out_of_range, 0);

	for (long k = 0; k < 5; k++) {
		CALL6(k);
		cr_assert_eq(nhits(&hit_a), k + 1, "trampoline not reached exactly once");
		cr_assert_eq(atomic_load(&hit_a.arg0), (unsigned long)V(k, 0));
		cr_assert_eq(atomic_load(&hit_a.ret), site + TC_SITE_SIZE,
			     "[rsp] in the trampoline is %#lx, not site+5",
			     atomic_load(&hit_a.ret));
	}
	call_all(9);		/* one more dt_f6 call */
	cr_assert_eq(nhits(&hit_a), 6);
	cr_assert_eq(atomic_load(&misaligned), 0);
	cr_assert_eq(nhits(&hit_b), 0);

	cr_assert_eq(unregister_ftrace_direct(&d, TA, true), 0);
	cr_assert_not(d.flags & FTRACE_OPS_FL_ENABLED);
	expect_all_nop5();
	call_all(10);
	cr_assert_eq(nhits(&hit_a), 6, "unregistered trampoline still called");
	st = tc_stat();
	cr_assert_eq(st.nr_enabled, 0);
	cr_assert_eq(st.nr_direct_in_range, 0);

	/* not registered any more */
	expect_err(unregister_ftrace_direct(&d, TA, true), -EINVAL);

	/* the same ops can come back, here with another trampoline */
	filter_ip(&d, dt_f6);
	cr_assert_eq(register_ftrace_direct(&d, TB), 0);
	expect_direct(dt_f6, TB);
	CALL6(11);
	cr_assert_eq(nhits(&hit_a), 6);
	cr_assert_eq(nhits(&hit_b), 1);
	cr_assert_eq(unregister_ftrace_direct(&d, TB, true), 0);
	expect_all_nop5();
}

Test(unregister_ftrace_direct, einval_when_not_registered)
{
	static struct ftrace_ops never, normal;
	static struct tc_counter c;

	cr_assert_eq(usft_init(), 0);
	expect_err(unregister_ftrace_direct(&never, TA, false), -EINVAL);
	filter_ip(&normal, dt_f6);
	expect_err(unregister_ftrace_direct(&normal, TA, false), -EINVAL);
	expect_err(unregister_ftrace_direct(NULL, TA, false), -EINVAL);

	/* a normal registered ops is not a direct ops */
	tc_counter_init(&c, FTRACE_OPS_FL_SAVE_REGS);
	filter(&c.ops, "dt_f6");
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	expect_err(unregister_ftrace_direct(&c.ops, TA, false), -EINVAL);
	cr_assert(c.ops.flags & FTRACE_OPS_FL_ENABLED);
	CALL6(1);
	cr_assert_eq(tc_count(&c), 1);
	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	expect_all_nop5();
}

Test(register_ftrace_direct, ebusy_for_a_second_direct_on_the_function)
{
	static struct ftrace_ops d1, d2, d3;

	cr_assert_eq(usft_init(), 0);
	filter_ip(&d1, dt_f6);
	filter_ip(&d2, dt_f6);
	cr_assert_eq(register_ftrace_direct(&d1, TA), 0);

	expect_err(register_ftrace_direct(&d2, TB), -EBUSY);
	expect_err(register_ftrace_direct(&d2, TA), -EBUSY);	/* same target too */
	cr_assert_not(d2.flags & FTRACE_OPS_FL_ENABLED);
	cr_assert_null(d2.func, "refused ops was modified");
	expect_direct(dt_f6, TA);
	CALL6(1);
	cr_assert_eq(nhits(&hit_a), 1);
	cr_assert_eq(nhits(&hit_b), 0);

	/* an ops covering the busy function and a free one is refused whole */
	filter_ip(&d3, dt_f1);
	filter_ip(&d3, dt_f6);
	expect_err(register_ftrace_direct(&d3, TB), -EBUSY);
	expect_nop5(dt_f1);
	cr_assert_eq(dt_f1(3), E1(3));
	cr_assert_eq(nhits(&hit_b), 0);

	/* a direct on another function coexists */
	cr_assert_eq(ftrace_set_filter_ip(&d3, (unsigned long)dt_f6, 1, 0), 0);
	cr_assert_eq(register_ftrace_direct(&d3, TB), 0);
	expect_direct(dt_f1, TB);
	expect_direct(dt_f6, TA);
	cr_assert_eq(dt_f1(3), E1(3));
	CALL6(2);
	cr_assert_eq(nhits(&hit_a), 2);
	cr_assert_eq(nhits(&hit_b), 1);

	/* once the owner leaves, the function is free again */
	cr_assert_eq(unregister_ftrace_direct(&d1, TA, true), 0);
	expect_nop5(dt_f6);
	cr_assert_eq(register_ftrace_direct(&d2, TB), 0);
	expect_direct(dt_f6, TB);
	CALL6(3);
	cr_assert_eq(nhits(&hit_a), 2);
	cr_assert_eq(nhits(&hit_b), 2);
	cr_assert_eq(dt_f1(4), E1(4));	/* d3 still there */
	cr_assert_eq(nhits(&hit_b), 3);
	cr_assert_eq(unregister_ftrace_direct(&d2, TB, true), 0);
	cr_assert_eq(unregister_ftrace_direct(&d3, TB, true), 0);
	expect_all_nop5();
	cr_assert_eq(tc_stat().nr_ops, 0);
}

/* ---- ftrace-direct.tc: the four interleavings with a normal ops ------- */

enum step { TRACER_ON, DIRECT_ON, TRACER_OFF, DIRECT_OFF };

static struct tc_counter tracer;
static struct ftrace_ops dops;
static unsigned long tracer_only_target;
/* kprobe-direct.tc's second pass: another direct ops live on dt_f5 (TB) */
static struct ftrace_ops dops2;
static bool second_direct;

static void check_state(const char *when, bool t_on, bool d_on, long *k)
{
	long t0 = tc_count(&tracer), a0 = nhits(&hit_a);
	unsigned long site = tc_site(dt_f6);

	if (!t_on && !d_on) {
		expect_nop5(dt_f6);
	} else if (d_on && !t_on) {
		expect_direct(dt_f6, TA);
	} else if (t_on && !d_on) {
		expect_not_direct(dt_f6, TA);
		/* back to the tracer's own target whatever the order */
		if (tracer_only_target)
			cr_assert_eq(tc_call_target(dt_f6), tracer_only_target,
				     "%s: tracer alone but site calls %#lx, first %#lx",
				     when, tc_call_target(dt_f6), tracer_only_target);
		tracer_only_target = tc_call_target(dt_f6);
	} else {
		/* shared: through ftrace_regs_caller, not the tramp nor the tracer's */
		expect_not_direct(dt_f6, TA);
	}
	expect_nop5(dt_f1);
	for (int i = 0; i < 3; i++)
		CALL6((*k)++);
	cr_assert_eq(tc_count(&tracer) - t0, t_on ? 3 : 0, "%s: tracer counted %ld of 3",
		     when, tc_count(&tracer) - t0);
	cr_assert_eq(nhits(&hit_a) - a0, d_on ? 3 : 0, "%s: trampoline hit %ld of 3",
		     when, nhits(&hit_a) - a0);
	if (d_on)
		cr_assert_eq(atomic_load(&hit_a.ret), site + TC_SITE_SIZE, "%s: [rsp] %#lx",
			     when, atomic_load(&hit_a.ret));
	if (t_on)
		cr_assert_eq(atomic_load(&tracer.last_ip), site);
	cr_assert_eq(tracer.no_regs, 0);
	cr_assert_eq(tracer.bad_regs_ip, 0);
	cr_assert_eq(atomic_load(&misaligned), 0, "%s: trampoline entered with a "
		     "misaligned stack", when);
	if (second_direct) {
		long b0 = nhits(&hit_b);

		/* the other function's direct call is untouched by every step */
		expect_direct(dt_f5, TB);
		for (int i = 0; i < 3; i++, (*k)++)
			cr_assert_eq(dt_f5(V(*k, 0), V(*k, 1), V(*k, 2), V(*k, 3), V(*k, 4)),
				     E5(V(*k, 0), V(*k, 1), V(*k, 2), V(*k, 3), V(*k, 4)));
		cr_assert_eq(nhits(&hit_b) - b0, 3, "%s: the second direct ops hit %ld of 3",
			     when, nhits(&hit_b) - b0);
	}
}

static void run_order2(const enum step order[4], unsigned long tracer_flags, bool second)
{
	static const char *const names[] = { "tracer on", "direct on", "tracer off",
					      "direct off" };
	bool t_on = false, d_on = false;
	long k = 0, b0;

	cr_assert_eq(usft_init(), 0);
	tc_counter_init(&tracer, tracer_flags);
	filter(&tracer.ops, "dt_f6");
	filter_ip(&dops, dt_f6);
	if (second) {
		filter_ip(&dops2, dt_f5);
		cr_assert_eq(register_ftrace_direct(&dops2, TB), 0);
		second_direct = true;
	}
	check_state("start", false, false, &k);
	for (int i = 0; i < 4; i++) {
		switch (order[i]) {
		case TRACER_ON:
			cr_assert_eq(register_ftrace_function(&tracer.ops), 0);
			t_on = true;
			break;
		case DIRECT_ON:
			cr_assert_eq(register_ftrace_direct(&dops, TA), 0);
			d_on = true;
			break;
		case TRACER_OFF:
			cr_assert_eq(unregister_ftrace_function(&tracer.ops), 0);
			t_on = false;
			break;
		case DIRECT_OFF:
			cr_assert_eq(unregister_ftrace_direct(&dops, TA, false), 0);
			d_on = false;
			break;
		}
		check_state(names[order[i]], t_on, d_on, &k);
	}
	if (second) {
		second_direct = false;
		cr_assert_eq(unregister_ftrace_direct(&dops2, TB, true), 0);
	}
	cr_assert_eq(tc_stat().nr_enabled, 0);
	cr_assert_eq(tc_stat().nr_ops, 0);
	call_all(100);
	expect_all_nop5();

	/* unregistered with free_filters=false: the filter is still there */
	b0 = nhits(&hit_b);
	cr_assert_eq(register_ftrace_direct(&dops, TB), 0);
	expect_direct(dt_f6, TB);
	CALL6(k++);
	cr_assert_eq(nhits(&hit_b) - b0, 1);
	cr_assert_eq(unregister_ftrace_direct(&dops, TB, true), 0);
	expect_all_nop5();
	/* ... and now it is gone */
	expect_err(register_ftrace_direct(&dops, TB), -EINVAL);
}

static void run_order(const enum step order[4], unsigned long tracer_flags)
{
	run_order2(order, tracer_flags, false);
}

static const enum step order1[] = { TRACER_ON, DIRECT_ON, DIRECT_OFF, TRACER_OFF };
static const enum step order2[] = { TRACER_ON, DIRECT_ON, TRACER_OFF, DIRECT_OFF };
static const enum step order3[] = { DIRECT_ON, TRACER_ON, TRACER_OFF, DIRECT_OFF };
static const enum step order4[] = { DIRECT_ON, TRACER_ON, DIRECT_OFF, TRACER_OFF };

Test(ftrace_direct_tc, tracer_direct_undirect_untracer) { run_order(order1, 0); }
Test(ftrace_direct_tc, tracer_direct_untracer_undirect) { run_order(order2, 0); }
Test(ftrace_direct_tc, direct_tracer_untracer_undirect) { run_order(order3, 0); }
Test(ftrace_direct_tc, direct_tracer_undirect_untracer) { run_order(order4, 0); }

/* the same with a SAVE_REGS tracer (the REGS flag is shared with the direct ops) */
Test(ftrace_direct_tc, regs_tracer_direct_undirect_untracer)
{
	run_order(order1, FTRACE_OPS_FL_SAVE_REGS);
}
Test(ftrace_direct_tc, regs_tracer_direct_untracer_undirect)
{
	run_order(order2, FTRACE_OPS_FL_SAVE_REGS);
}
Test(ftrace_direct_tc, regs_direct_tracer_untracer_undirect)
{
	run_order(order3, FTRACE_OPS_FL_SAVE_REGS);
}
Test(ftrace_direct_tc, regs_direct_tracer_undirect_untracer)
{
	run_order(order4, FTRACE_OPS_FL_SAVE_REGS);
}

/*
 * kprobe-direct.tc: a kprobe on a function's ftrace site is an ops with
 * SAVE_REGS (the kernel's kprobe_ftrace_ops), so its first pass is the
 * regs_* orders above; its second pass runs them again "with a second
 * registered direct function" (the kernel loads ftrace-direct-too: here a
 * direct ops on dt_f5), whose calls must reach their own trampoline at
 * every step.
 */
Test(kprobe_direct_tc, second_direct_probe_direct_undirect_unprobe)
{
	run_order2(order1, FTRACE_OPS_FL_SAVE_REGS, true);
}
Test(kprobe_direct_tc, second_direct_probe_direct_unprobe_undirect)
{
	run_order2(order2, FTRACE_OPS_FL_SAVE_REGS, true);
}
Test(kprobe_direct_tc, second_direct_direct_probe_unprobe_undirect)
{
	run_order2(order3, FTRACE_OPS_FL_SAVE_REGS, true);
}
Test(kprobe_direct_tc, second_direct_direct_probe_undirect_unprobe)
{
	run_order2(order4, FTRACE_OPS_FL_SAVE_REGS, true);
}

/*
 * ftrace-direct.tc's four orders again with function_graph as the tracer:
 * an fgraph_ops on dt_f6 counting entries and returns (with the right
 * return value) while the direct trampoline comes and goes.
 */
static atomic_long g_ent, g_ret, g_bad;

static notrace int order_graph_ent(struct ftrace_graph_ent *t, struct fgraph_ops *g,
				   struct ftrace_regs *f)
{
	atomic_fetch_add(&g_ent, 1);
	return 1;
}

static notrace void order_graph_ret(struct ftrace_graph_ret *t, struct fgraph_ops *g,
				    struct ftrace_regs *f)
{
	long a = (long)ftrace_regs_get_return_value(f);

	atomic_fetch_add(&g_ret, 1);
	if (!f || a == 0)
		atomic_fetch_add(&g_bad, 1);
}

static void graph_state(const char *when, struct fgraph_ops *g, bool t_on, bool d_on, long *k)
{
	long e0 = atomic_load(&g_ent), r0 = atomic_load(&g_ret), a0 = nhits(&hit_a);

	if (!t_on && !d_on)
		expect_nop5(dt_f6);
	else if (d_on && !t_on)
		expect_direct(dt_f6, TA);
	else	/* a caller (graph jmp mode: a jmp), never the trampoline itself */
		cr_assert(!tc_is_nop5(dt_f6) && !(tc_is_call(dt_f6) && tc_call_target(dt_f6) == TA),
			  "%s: the site is a nop or calls the trampoline", when);
	for (int i = 0; i < 3; i++)
		CALL6((*k)++);
	cr_assert_eq(atomic_load(&g_ent) - e0, t_on ? 3 : 0, "%s: %ld graph entries of 3", when,
		     atomic_load(&g_ent) - e0);
	cr_assert_eq(atomic_load(&g_ret) - r0, t_on ? 3 : 0, "%s: %ld graph returns of 3", when,
		     atomic_load(&g_ret) - r0);
	cr_assert_eq(nhits(&hit_a) - a0, d_on ? 3 : 0, "%s: trampoline hit %ld of 3", when,
		     nhits(&hit_a) - a0);
	cr_assert_eq(atomic_load(&g_bad), 0, "%s: a return without its value", when);
}

static void run_order_graph(const enum step order[4])
{
	static const char *const names[] = { "graph on", "direct on", "graph off",
					      "direct off" };
	static struct fgraph_ops g = { .entryfunc = order_graph_ent, .retfunc = order_graph_ret };
	bool t_on = false, d_on = false;
	long k = 1;

	cr_assert_eq(usft_init(), 0);
	filter(&g.ops, "dt_f6");
	filter_ip(&dops, dt_f6);
	graph_state("start", &g, false, false, &k);
	for (int i = 0; i < 4; i++) {
		switch (order[i]) {
		case TRACER_ON:
			cr_assert_eq(register_ftrace_graph(&g), 0);
			t_on = true;
			break;
		case DIRECT_ON:
			cr_assert_eq(register_ftrace_direct(&dops, TA), 0);
			d_on = true;
			break;
		case TRACER_OFF:
			unregister_ftrace_graph(&g);
			t_on = false;
			break;
		case DIRECT_OFF:
			cr_assert_eq(unregister_ftrace_direct(&dops, TA, true), 0);
			d_on = false;
			break;
		}
		graph_state(names[order[i]], &g, t_on, d_on, &k);
	}
	cr_assert_eq(tc_stat().nr_enabled, 0);
	expect_all_nop5();
}

Test(ftrace_direct_tc, graph_direct_undirect_ungraph) { run_order_graph(order1); }
Test(ftrace_direct_tc, graph_direct_ungraph_undirect) { run_order_graph(order2); }
Test(ftrace_direct_tc, direct_graph_ungraph_undirect) { run_order_graph(order3); }
Test(ftrace_direct_tc, direct_graph_undirect_ungraph) { run_order_graph(order4); }

/* ---- jmp mode ----------------------------------------------------------- */

static void check_jmp_calls(long from, int n, long tracer_before, struct tc_counter *t)
{
	unsigned long site = tc_site(dt_f6);
	long j0 = nhits(&hit_j);

	for (int i = 0; i < n; i++) {
		CALL6(from + i);
		cr_assert_eq(nhits(&hit_j), j0 + i + 1, "jmp trampoline not reached once");
		cr_assert_eq(atomic_load(&hit_j.arg0), (unsigned long)V(from + i, 0));
		/* jmp mode: [rsp] is the caller's return address, not site+5 */
		cr_assert_neq(atomic_load(&hit_j.ret), site + TC_SITE_SIZE,
			      "jmp-mode trampoline entered as if called from the site");
	}
	if (t)
		cr_assert_eq(tc_count(t) - tracer_before, n);
	cr_assert_eq(nhits(&hit_a), 0);
	cr_assert_eq(atomic_load(&misaligned), 0, "jmp trampoline entered with a "
		     "misaligned stack");
}

Test(register_ftrace_direct, jmp_mode_alone_and_shared)
{
	static struct ftrace_ops d;
	static struct tc_counter c;

	cr_assert_eq(usft_init(), 0);
	direct_jmp_body = tc_site(dt_f6) + TC_SITE_SIZE;
	filter_ip(&d, dt_f6);
	cr_assert_eq(register_ftrace_direct(&d, ftrace_jmp_set(TJ)), 0);
	expect_jmp(dt_f6, TJ);
	check_jmp_calls(0, 4, 0, NULL);
	cr_assert_eq(tc_stat().nr_direct_in_range, 1);

	/* shared with a counting ops: the regs caller "returns" into tramp_jmp */
	tc_counter_init(&c, 0);
	filter(&c.ops, "dt_f6");
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	expect_not_direct(dt_f6, TJ);
	check_jmp_calls(10, 4, 0, &c);
	call_all(20);
	cr_assert_eq(tc_count(&c), 5);
	cr_assert_eq(nhits(&hit_j), 9);

	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	expect_jmp(dt_f6, TJ);
	check_jmp_calls(30, 2, 0, NULL);
	cr_assert_eq(tc_count(&c), 5, "unregistered ops still called");

	/* the jmp bit is ignored when matching the address to remove */
	cr_assert_eq(unregister_ftrace_direct(&d, TJ, true), 0);
	expect_all_nop5();
	call_all(40);
	cr_assert_eq(nhits(&hit_j), 11);
	cr_assert_eq(tc_stat().nr_ops, 0);

	/* and the function is free for another direct */
	filter_ip(&d, dt_f6);
	cr_assert_eq(register_ftrace_direct(&d, TA), 0);
	expect_direct(dt_f6, TA);
	CALL6(50);
	cr_assert_eq(nhits(&hit_a), 1);
	cr_assert_eq(unregister_ftrace_direct(&d, TA, true), 0);
}

Test(register_ftrace_direct, jmp_mode_tracer_first)
{
	static struct ftrace_ops d;
	static struct tc_counter c;

	cr_assert_eq(usft_init(), 0);
	direct_jmp_body = tc_site(dt_f6) + TC_SITE_SIZE;
	tc_counter_init(&c, FTRACE_OPS_FL_SAVE_REGS);
	filter(&c.ops, "dt_f6");
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	filter_ip(&d, dt_f6);
	cr_assert_eq(register_ftrace_direct(&d, ftrace_jmp_set(TJ)), 0);
	expect_not_direct(dt_f6, TJ);
	check_jmp_calls(0, 3, 0, &c);
	cr_assert_eq(unregister_ftrace_direct(&d, ftrace_jmp_set(TJ), true), 0);
	expect_call(dt_f6);
	CALL6(10);
	cr_assert_eq(nhits(&hit_j), 3);
	cr_assert_eq(tc_count(&c), 4);
	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	expect_all_nop5();
}

/* ---- reach: out-of-range trampolines go through ftrace_regs_caller ------- */

struct far_ctr {
	atomic_long n;
	unsigned long ret;	/* written by the trampoline: [rsp] */
};
static struct far_ctr far_ctr;

/* copy the PIC trampoline with its slot pointing at far_ctr */
static unsigned long copy_far_tramp(size_t *lenp)
{
	size_t len = (size_t)(far_tramp_end - far_tramp_start);
	size_t slot = (size_t)(far_tramp_slot - far_tramp_start);
	unsigned char *buf = malloc(len);
	unsigned long p = (unsigned long)&far_ctr;
	void *t;

	cr_assert_not_null(buf);
	memcpy(buf, far_tramp_start, len);
	memcpy(buf + slot, &p, sizeof(p));
	t = usft_alloc_trampoline(buf, len, 0);
	free(buf);
	cr_assert_not_null(t, "usft_alloc_trampoline: errno %d", errno);
	*lenp = len;
	return (unsigned long)t;
}

static bool rel32_reachable(unsigned long site, unsigned long target)
{
#if defined(__aarch64__)
	/* BL: +-128 MiB from the BL itself */
	long d = (long)(target - site);

	return d >= -(128L << 20) && d < (128L << 20);
#else
	long d = (long)(target - (site + TC_SITE_SIZE));

	return d >= INT32_MIN && d <= INT32_MAX;
#endif
}

static void check_far_calls(long from, int n)
{
	unsigned long site = tc_site(dt_f6);
	long f0 = atomic_load(&far_ctr.n);

	for (int i = 0; i < n; i++) {
		CALL6(from + i);
		cr_assert_eq(atomic_load(&far_ctr.n), f0 + i + 1,
			     "copied trampoline reached %ld times for %d calls",
			     atomic_load(&far_ctr.n) - f0, i + 1);
		cr_assert_eq(far_ctr.ret, site + TC_SITE_SIZE, "[rsp] %#lx", far_ctr.ret);
	}
}

Test(direct_reach, far_trampoline_is_reached_through_the_regs_caller)
{
	static struct ftrace_ops d;
	struct usft_stats st;
	unsigned long t, site = tc_site(dt_f6);
	size_t len;
	bool reach;

	cr_assert_eq(usft_init(), 0);
	cr_assert_eq(usft_set_option("tramp_placement", "far"), 0);
	t = copy_far_tramp(&len);
	reach = rel32_reachable(site, t);
	if (reach)
		cr_log_warn("far copy %#lx is within rel32 of %#lx: out-of-range path untested",
			    t, site);
	filter_ip(&d, dt_f6);
	cr_assert_eq(register_ftrace_direct(&d, t), 0);
	if (reach)
		expect_direct(dt_f6, t);
	else
		expect_not_direct(dt_f6, t);
	check_far_calls(0, 5);
	call_all(10);
	cr_assert_eq(atomic_load(&far_ctr.n), 6);
	st = tc_stat();
	cr_assert_eq(st.nr_direct_out_of_range, reach ? 0 : 1);
	cr_assert_eq(st.nr_direct_in_range, reach ? 1 : 0);

	cr_assert_eq(unregister_ftrace_direct(&d, t, true), 0);
	expect_all_nop5();
	call_all(20);
	cr_assert_eq(atomic_load(&far_ctr.n), 6);
	st = tc_stat();
	cr_assert_eq(st.nr_direct_out_of_range, 0);
	cr_assert_eq(st.nr_direct_in_range, 0);
	usft_free_trampoline((void *)t, len);
}

/* a far direct trampoline sharing its site with a counting ops (regs tracer
 * leaves first, then the direct ops) */
Test(direct_reach, far_trampoline_shared_with_a_tracer)
{
	static struct ftrace_ops d;
	static struct tc_counter c;
	unsigned long t;
	size_t len;

	cr_assert_eq(usft_init(), 0);
	cr_assert_eq(usft_set_option("tramp_placement", "far"), 0);
	t = copy_far_tramp(&len);
	filter_ip(&d, dt_f6);
	cr_assert_eq(register_ftrace_direct(&d, t), 0);
	tc_counter_init(&c, FTRACE_OPS_FL_SAVE_REGS);
	filter(&c.ops, "dt_f6");
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	expect_not_direct(dt_f6, t);
	check_far_calls(0, 3);
	cr_assert_eq(tc_count(&c), 3);
	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	check_far_calls(10, 2);
	cr_assert_eq(tc_count(&c), 3);
	cr_assert_eq(unregister_ftrace_direct(&d, t, true), 0);
	expect_all_nop5();
	cr_assert_eq(tc_stat().disabled, 0);
}

/* the direct ops leaves first: the tracer is alone again on its site */
Test(direct_reach, far_trampoline_direct_leaves_first)
{
	static struct ftrace_ops d;
	static struct tc_counter c;
	unsigned long t;
	size_t len;

	cr_assert_eq(usft_init(), 0);
	cr_assert_eq(usft_set_option("tramp_placement", "far"), 0);
	t = copy_far_tramp(&len);
	filter_ip(&d, dt_f6);
	cr_assert_eq(register_ftrace_direct(&d, t), 0);
	tc_counter_init(&c, 0);
	filter(&c.ops, "dt_f6");
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	check_far_calls(0, 3);
	cr_assert_eq(unregister_ftrace_direct(&d, t, true), 0);
	cr_assert_eq(tc_stat().disabled, 0, "runtime killed when the direct ops left");
	expect_call(dt_f6);
	CALL6(10);
	cr_assert_eq(tc_count(&c), 4);
	cr_assert_eq(atomic_load(&far_ctr.n), 3);
	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	expect_all_nop5();
}

Test(direct_reach, near_copy_is_called_straight)
{
	static struct ftrace_ops d;
	struct usft_stats st;
	unsigned long t;
	size_t len;

	cr_assert_eq(usft_init(), 0);
	cr_assert_eq(usft_set_option("tramp_placement", "near"), 0);
	t = copy_far_tramp(&len);
	cr_assert(rel32_reachable(tc_site(dt_f6), t), "near copy %#lx out of rel32 reach", t);
	filter_ip(&d, dt_f6);
	cr_assert_eq(register_ftrace_direct(&d, t), 0);
	expect_direct(dt_f6, t);
	check_far_calls(0, 4);
	st = tc_stat();
	cr_assert_eq(st.nr_direct_in_range, 1);
	cr_assert_eq(st.nr_direct_out_of_range, 0);
	cr_assert_eq(unregister_ftrace_direct(&d, t, true), 0);
	expect_all_nop5();
	usft_free_trampoline((void *)t, len);
}

Test(direct_reach, direct_calls_off_forces_the_caller)
{
	static struct ftrace_ops d;
	struct usft_stats st;

	cr_assert_eq(usft_init(), 0);
	cr_assert_eq(usft_set_option("direct_calls", "0"), 0);
	filter_ip(&d, dt_f6);
	cr_assert_eq(register_ftrace_direct(&d, TA), 0);
	expect_not_direct(dt_f6, TA);
	for (long k = 0; k < 4; k++) {
		CALL6(k);
		cr_assert_eq(nhits(&hit_a), k + 1);
		cr_assert_eq(atomic_load(&hit_a.ret), tc_site(dt_f6) + TC_SITE_SIZE);
	}
	cr_assert_eq(atomic_load(&misaligned), 0);
	st = tc_stat();
	cr_assert_eq(st.nr_direct_out_of_range, 1);
	cr_assert_eq(st.nr_direct_in_range, 0);
	/* not a live option */
	expect_err(usft_set_option("direct_calls", "1"), -EBUSY);
	cr_assert_eq(unregister_ftrace_direct(&d, TA, true), 0);
	expect_all_nop5();

	cr_assert_eq(usft_set_option("direct_calls", "1"), 0);
	filter_ip(&d, dt_f6);
	cr_assert_eq(register_ftrace_direct(&d, TA), 0);
	expect_direct(dt_f6, TA);
	CALL6(10);
	cr_assert_eq(nhits(&hit_a), 5);
	cr_assert_eq(unregister_ftrace_direct(&d, TA, true), 0);
}

/* ---- IPMODIFY handshake (ops_func) -------------------------------------- */

struct rec_ops {
	struct ftrace_ops ops;
	int n;
	struct {
		enum ftrace_ops_cmd cmd;
		unsigned long ip;
	} log[16];
	int ret_peer;
	int ret_self;
	int self_eagain_once;	/* -EAGAIN on the first SELF, then 0 (BPF retry) */
};

static notrace int rec_ops_func(struct ftrace_ops *op, unsigned long ip,
				enum ftrace_ops_cmd cmd)
{
	struct rec_ops *r = container_of(op, struct rec_ops, ops);

	if (r->n < (int)TC_ARRAY_SIZE(r->log)) {
		r->log[r->n].cmd = cmd;
		r->log[r->n].ip = ip;
	}
	r->n++;
	switch (cmd) {
	case FTRACE_OPS_CMD_ENABLE_SHARE_IPMODIFY_SELF:
		if (r->self_eagain_once) {
			r->self_eagain_once = 0;
			return -EAGAIN;
		}
		return r->ret_self;
	case FTRACE_OPS_CMD_ENABLE_SHARE_IPMODIFY_PEER:
		return r->ret_peer;
	default:
		return 0;
	}
}

#define expect_log(r, i, c, site)                                              \
	do {                                                                   \
		cr_assert_gt((r)->n, (i));                                     \
		cr_assert_eq((r)->log[i].cmd, (c), "ops_func call %d: cmd %d, expected %s", \
			     (i), (r)->log[i].cmd, #c);                        \
		cr_assert_eq((r)->log[i].ip, (site), "ops_func ip %#lx, expected site %#lx", \
			     (r)->log[i].ip, (unsigned long)(site));           \
	} while (0)

static struct rec_ops rd;
static struct tc_counter ipm;

static void setup_direct_with_ops_func(bool with_ops_func)
{
	cr_assert_eq(usft_init(), 0);
	memset(&rd, 0, sizeof(rd));
	if (with_ops_func)
		rd.ops.ops_func = rec_ops_func;
	filter_ip(&rd.ops, dt_f1);
	tc_counter_init(&ipm, FTRACE_OPS_FL_IPMODIFY | FTRACE_OPS_FL_SAVE_REGS);
	filter(&ipm.ops, "dt_f1");
}

Test(direct_ipmodify, peer_enable_and_disable)
{
	unsigned long site = tc_site(dt_f1);

	setup_direct_with_ops_func(true);
	cr_assert_eq(register_ftrace_direct(&rd.ops, TA), 0);
	cr_assert_eq(rd.n, 0, "ops_func called on a plain register");
	expect_direct(dt_f1, TA);

	cr_assert_eq(register_ftrace_function(&ipm.ops), 0);
	cr_assert_eq(rd.n, 1);
	expect_log(&rd, 0, FTRACE_OPS_CMD_ENABLE_SHARE_IPMODIFY_PEER, site);
	expect_not_direct(dt_f1, TA);
	for (long k = 0; k < 3; k++)
		cr_assert_eq(dt_f1(k), E1(k));
	cr_assert_eq(tc_count(&ipm), 3);
	cr_assert_eq(nhits(&hit_a), 3);

	cr_assert_eq(unregister_ftrace_function(&ipm.ops), 0);
	cr_assert_eq(rd.n, 2);
	expect_log(&rd, 1, FTRACE_OPS_CMD_DISABLE_SHARE_IPMODIFY_PEER, site);
	expect_direct(dt_f1, TA);
	cr_assert_eq(dt_f1(5), E1(5));
	cr_assert_eq(tc_count(&ipm), 3);
	cr_assert_eq(nhits(&hit_a), 4);
	cr_assert_eq(unregister_ftrace_direct(&rd.ops, TA, true), 0);
	cr_assert_eq(rd.n, 2);
	expect_all_nop5();
}

Test(direct_ipmodify, peer_refusal_is_returned)
{
	setup_direct_with_ops_func(true);
	rd.ret_peer = -EPERM;
	cr_assert_eq(register_ftrace_direct(&rd.ops, TA), 0);
	expect_err(register_ftrace_function(&ipm.ops), -EPERM);
	cr_assert_eq(rd.n, 1);
	cr_assert_not(ipm.ops.flags & FTRACE_OPS_FL_ENABLED);
	expect_direct(dt_f1, TA);
	cr_assert_eq(dt_f1(1), E1(1));
	cr_assert_eq(tc_count(&ipm), 0);
	cr_assert_eq(nhits(&hit_a), 1);
	cr_assert_eq(unregister_ftrace_direct(&rd.ops, TA, true), 0);
	cr_assert_eq(rd.n, 1, "DISABLE_PEER sent for a peer that never came");
}

Test(direct_ipmodify, no_ops_func_means_ebusy)
{
	setup_direct_with_ops_func(false);
	cr_assert_eq(register_ftrace_direct(&rd.ops, TA), 0);
	expect_err(register_ftrace_function(&ipm.ops), -EBUSY);
	cr_assert_not(ipm.ops.flags & FTRACE_OPS_FL_ENABLED);
	expect_direct(dt_f1, TA);
	cr_assert_eq(dt_f1(1), E1(1));
	cr_assert_eq(nhits(&hit_a), 1);
	cr_assert_eq(tc_count(&ipm), 0);
	cr_assert_eq(unregister_ftrace_direct(&rd.ops, TA, true), 0);
	expect_all_nop5();

	/* the IPMODIFY ops may take the function now */
	cr_assert_eq(register_ftrace_function(&ipm.ops), 0);
	cr_assert_eq(dt_f1(1), E1(1));
	cr_assert_eq(tc_count(&ipm), 1);
	cr_assert_eq(unregister_ftrace_function(&ipm.ops), 0);
}

Test(direct_ipmodify, ipmodify_first_then_direct_self)
{
	unsigned long site = tc_site(dt_f1);

	setup_direct_with_ops_func(true);
	cr_assert_eq(register_ftrace_function(&ipm.ops), 0);
	cr_assert_eq(register_ftrace_direct(&rd.ops, TA), 0);
	cr_assert_eq(rd.n, 1);
	expect_log(&rd, 0, FTRACE_OPS_CMD_ENABLE_SHARE_IPMODIFY_SELF, site);
	expect_not_direct(dt_f1, TA);
	cr_assert_eq(dt_f1(2), E1(2));
	cr_assert_eq(tc_count(&ipm), 1);
	cr_assert_eq(nhits(&hit_a), 1);

	cr_assert_eq(unregister_ftrace_direct(&rd.ops, TA, true), 0);
	cr_assert_eq(dt_f1(2), E1(2));
	cr_assert_eq(tc_count(&ipm), 2);
	cr_assert_eq(nhits(&hit_a), 1);
	cr_assert_eq(unregister_ftrace_function(&ipm.ops), 0);
	cr_assert_eq(rd.n, 1);
	expect_all_nop5();
}

Test(direct_ipmodify, self_eagain_fails_and_retry_succeeds)
{
	unsigned long before, site = tc_site(dt_f1);

	setup_direct_with_ops_func(true);
	rd.self_eagain_once = 1;
	cr_assert_eq(register_ftrace_function(&ipm.ops), 0);
	expect_call(dt_f1);
	before = tc_call_target(dt_f1);

	expect_err(register_ftrace_direct(&rd.ops, TA), -EAGAIN);
	cr_assert_eq(rd.n, 1);
	expect_log(&rd, 0, FTRACE_OPS_CMD_ENABLE_SHARE_IPMODIFY_SELF, site);
	cr_assert_not(rd.ops.flags & FTRACE_OPS_FL_ENABLED);
	cr_assert_eq(tc_call_target(dt_f1), before, "site changed by a failed register");
	cr_assert_eq(dt_f1(3), E1(3));
	cr_assert_eq(tc_count(&ipm), 1);
	cr_assert_eq(nhits(&hit_a), 0, "trampoline of a failed register is called");
	cr_assert_eq(tc_stat().nr_ops, 1);

	/* the retry (BPF regenerated its trampoline) */
	cr_assert_eq(register_ftrace_direct(&rd.ops, TA), 0);
	cr_assert_eq(rd.n, 2);
	expect_log(&rd, 1, FTRACE_OPS_CMD_ENABLE_SHARE_IPMODIFY_SELF, site);
	cr_assert_eq(dt_f1(3), E1(3));
	cr_assert_eq(tc_count(&ipm), 2);
	cr_assert_eq(nhits(&hit_a), 1);
	cr_assert_eq(unregister_ftrace_direct(&rd.ops, TA, true), 0);
	cr_assert_eq(unregister_ftrace_function(&ipm.ops), 0);
	expect_all_nop5();
}

Test(direct_ipmodify, ipmodify_first_direct_without_ops_func_is_ebusy)
{
	unsigned long before;

	setup_direct_with_ops_func(false);
	cr_assert_eq(register_ftrace_function(&ipm.ops), 0);
	before = tc_call_target(dt_f1);
	expect_err(register_ftrace_direct(&rd.ops, TA), -EBUSY);
	cr_assert_eq(tc_call_target(dt_f1), before);
	cr_assert_eq(dt_f1(3), E1(3));
	cr_assert_eq(nhits(&hit_a), 0);
	cr_assert_eq(tc_count(&ipm), 1);
	cr_assert_eq(unregister_ftrace_function(&ipm.ops), 0);
	expect_all_nop5();
}

/* modify on a site shared with IPMODIFY renegotiates (kernel: __modify_ftrace_direct()) */
Test(direct_ipmodify, modify_renegotiates_self)
{
	unsigned long site = tc_site(dt_f1);

	setup_direct_with_ops_func(true);
	cr_assert_eq(register_ftrace_function(&ipm.ops), 0);
	cr_assert_eq(register_ftrace_direct(&rd.ops, TA), 0);
	cr_assert_eq(rd.n, 1);
	cr_assert_eq(modify_ftrace_direct(&rd.ops, TB), 0);
	cr_assert_eq(tc_stat().disabled, 0, "modify killed the runtime");
	cr_assert_eq(rd.n, 2);
	expect_log(&rd, 1, FTRACE_OPS_CMD_ENABLE_SHARE_IPMODIFY_SELF, site);
	cr_assert_eq(dt_f1(4), E1(4));
	cr_assert_eq(nhits(&hit_a), 0);
	cr_assert_eq(nhits(&hit_b), 1);
	cr_assert_eq(tc_count(&ipm), 1);
	cr_assert_eq(unregister_ftrace_direct(&rd.ops, TB, true), 0);
	cr_assert_eq(unregister_ftrace_function(&ipm.ops), 0);
	expect_all_nop5();
}
