// SPDX-License-Identifier: MIT
/*
 * modify_ftrace_direct() / modify_ftrace_direct_nolock(): validation, the
 * tmp_ops dance (site bytes before/after), jmp <-> call retargets, a call
 * from inside ops_func (the BPF use), and the live retarget loop of
 * ftrace-direct-modify under concurrent callers: every call returns the
 * right value and reaches exactly one trampoline.
 * Kernel: modify_ftrace_direct(), modify_ftrace_direct_nolock()
 * (kernel/trace/ftrace.c), samples/ftrace/ftrace-direct-modify.c.
 * Trampolines: direct_tramps.S.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "test_common.h"

/* ---- trampolines (direct_tramps.S) and their C helpers ------------------ */

extern const char tramp_a[], tramp_b[], tramp_jmp[];
extern unsigned long direct_jmp_body;

#define TA ((unsigned long)tramp_a)
#define TB ((unsigned long)tramp_b)
#define TJ ((unsigned long)tramp_jmp)

struct hit {
	atomic_long n;
	_Atomic unsigned long arg0;
	_Atomic unsigned long ret;
};
static struct hit hit_a, hit_b, hit_j;
static _Atomic unsigned long expect_ret;	/* call mode: site + 5, if set */
static atomic_long bad_ret;

void direct_hit_a(unsigned long arg0, unsigned long ret);
void direct_hit_b(unsigned long arg0, unsigned long ret);
void direct_hit_jmp(unsigned long arg0, unsigned long ret);

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

static notrace void hit(struct hit *h, unsigned long arg0, unsigned long ret, bool call_mode)
{
	unsigned long want = atomic_load_explicit(&expect_ret, memory_order_relaxed);

	if (call_mode && want && ret != want)
		atomic_fetch_add(&bad_ret, 1);
	atomic_store_explicit(&h->arg0, arg0, memory_order_relaxed);
	atomic_store_explicit(&h->ret, ret, memory_order_relaxed);
	atomic_fetch_add(&h->n, 1);
	clobber_args();
}

notrace void direct_hit_a(unsigned long arg0, unsigned long ret) { hit(&hit_a, arg0, ret, true); }
notrace void direct_hit_b(unsigned long arg0, unsigned long ret) { hit(&hit_b, arg0, ret, true); }
notrace void direct_hit_jmp(unsigned long arg0, unsigned long ret) { hit(&hit_j, arg0, ret, false); }

static notrace long nhits(struct hit *h)
{
	return atomic_load(&h->n);
}

/* ---- traced functions -------------------------------------------------- */

#define E6(a, b, c, d, e, f) \
	((a) * 3 + 1 + (b) * 5 + (c) * 7 + (d) * 11 + (e) * 13 + (f) * 17)
#define V(k, i) ((long)(k) * 1000 + (i) * 37 + 1)

TRACEE long dm_f6(long a, long b, long c, long d, long e, long f)
{
	TRACEE_BODY();
	return E6(a, b, c, d, e, f);
}

TRACEE long dm_other(long x)
{
	TRACEE_BODY();
	return x * 7 + 3;
}

static notrace bool call6_ok(long k)
{
	return dm_f6(V(k, 0), V(k, 1), V(k, 2), V(k, 3), V(k, 4), V(k, 5)) ==
	       E6(V(k, 0), V(k, 1), V(k, 2), V(k, 3), V(k, 4), V(k, 5));
}

#define CALL6(k) cr_assert(call6_ok(k), "dm_f6(k=%ld): wrong result", (long)(k))

#if !defined(__aarch64__)
static notrace unsigned long branch_target(const void *fn, unsigned char op)
{
	unsigned char b[TC_SITE_SIZE];
	int32_t rel;

	if (tc_read_site(fn, b) != TC_SITE_SIZE || b[0] != op)
		return 0;
	memcpy(&rel, b + 1, 4);
	return tc_site(fn) + TC_SITE_SIZE + (long)rel;
}
#endif

#define expect_direct(fn, tramp)                                               \
	do {                                                                   \
		expect_call(fn);                                               \
		cr_assert_eq(tc_call_target((const void *)(fn)), (tramp),      \
			     "site of %s calls %#lx, not %#lx", #fn,           \
			     tc_call_target((const void *)(fn)),               \
			     (unsigned long)(tramp));                          \
	} while (0)

#if defined(__aarch64__)
/* no jmp mode on arm64: a jmp-marked direct address is called (docs/arm64.md) */
#define expect_jmp(fn, tramp) expect_direct(fn, tramp)
#else
#define expect_jmp(fn, tramp)                                                  \
	do {                                                                   \
		unsigned char _b[TC_SITE_SIZE];                                \
		char _s[32];                                                   \
		tc_read_site((const void *)(fn), _b);                          \
		cr_assert(_b[0] == 0xe9, "site of %s: expected jmp e9, got %s", \
			  #fn, tc_fmt_bytes(_b, TC_SITE_SIZE, _s));            \
		cr_assert_eq(branch_target((const void *)(fn), 0xe9), (tramp)); \
	} while (0)
#endif

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

/* ---- validation ---------------------------------------------------------- */

Test(modify_ftrace_direct, einval_when_not_registered)
{
	static struct ftrace_ops never, filtered, d;
	static struct tc_counter c;

	cr_assert_eq(usft_init(), 0);
	expect_err(modify_ftrace_direct(&never, TB), -EINVAL);
	expect_err(modify_ftrace_direct_nolock(&never, TB), -EINVAL);
	filter_ip(&filtered, dm_f6);
	expect_err(modify_ftrace_direct(&filtered, TB), -EINVAL);
	expect_err(modify_ftrace_direct(NULL, TB), -EINVAL);

	tc_counter_init(&c, FTRACE_OPS_FL_SAVE_REGS);
	cr_assert_eq(tc_set_filter(&c.ops, "dm_other", 1), 0);
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	expect_err(modify_ftrace_direct(&c.ops, TB), -EINVAL);
	cr_assert_eq(dm_other(1), 10);
	cr_assert_eq(tc_count(&c), 1);
	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);

	/* unregistered again: refused, site stays nop5 */
	filter_ip(&d, dm_f6);
	cr_assert_eq(register_ftrace_direct(&d, TA), 0);
	expect_err(modify_ftrace_direct(&d, 0), -EINVAL);
	expect_direct(dm_f6, TA);
	cr_assert_eq(unregister_ftrace_direct(&d, TA, true), 0);
	expect_err(modify_ftrace_direct(&d, TB), -EINVAL);
	expect_nop5(dm_f6);
	CALL6(1);
	cr_assert_eq(nhits(&hit_a) + nhits(&hit_b), 0);
}

/* ---- single retargets ------------------------------------------------------ */

Test(modify_ftrace_direct, retargets_call_and_jmp)
{
	static struct ftrace_ops d;
	unsigned long site = tc_site(dm_f6);

	cr_assert_eq(usft_init(), 0);
	direct_jmp_body = site + TC_SITE_SIZE;
	atomic_store(&expect_ret, site + TC_SITE_SIZE);
	filter_ip(&d, dm_f6);
	cr_assert_eq(register_ftrace_direct(&d, TA), 0);
	expect_direct(dm_f6, TA);
	CALL6(0);
	cr_assert_eq(nhits(&hit_a), 1);

	cr_assert_eq(modify_ftrace_direct(&d, TB), 0);
	cr_assert_eq(d.direct_call, TB);
	expect_direct(dm_f6, TB);
	expect_nop5(dm_other);
	CALL6(1);
	CALL6(2);
	cr_assert_eq(nhits(&hit_a), 1);
	cr_assert_eq(nhits(&hit_b), 2);

	/* call -> jmp mode */
	cr_assert_eq(modify_ftrace_direct(&d, ftrace_jmp_set(TJ)), 0);
	expect_jmp(dm_f6, TJ);
	CALL6(3);
	cr_assert_eq(nhits(&hit_j), 1);
	cr_assert_neq(atomic_load(&hit_j.ret), site + TC_SITE_SIZE);
	cr_assert_eq(nhits(&hit_b), 2);

	/* jmp -> call mode, with the _nolock variant (recursive direct_mutex) */
	cr_assert_eq(modify_ftrace_direct_nolock(&d, TA), 0);
	expect_direct(dm_f6, TA);
	CALL6(4);
	cr_assert_eq(nhits(&hit_a), 2);
	cr_assert_eq(nhits(&hit_j), 1);

	/* retarget to the same address is harmless */
	cr_assert_eq(modify_ftrace_direct(&d, TA), 0);
	expect_direct(dm_f6, TA);
	CALL6(5);
	cr_assert_eq(nhits(&hit_a), 3);

	cr_assert_eq(atomic_load(&bad_ret), 0);
	cr_assert_eq(unregister_ftrace_direct(&d, TA, true), 0);
	expect_nop5(dm_f6);
	cr_assert_eq(tc_stat().nr_ops, 0, "tmp_ops left registered");
	CALL6(6);
	cr_assert_eq(nhits(&hit_a), 3);
}

Test(modify_ftrace_direct, retarget_on_a_shared_site)
{
	static struct ftrace_ops d;
	static struct tc_counter c;
	unsigned long shared;

	cr_assert_eq(usft_init(), 0);
	filter_ip(&d, dm_f6);
	cr_assert_eq(register_ftrace_direct(&d, TA), 0);
	tc_counter_init(&c, 0);
	cr_assert_eq(tc_set_filter(&c.ops, "dm_f6", 1), 0);
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	expect_call(dm_f6);
	shared = tc_call_target(dm_f6);
	cr_assert_neq(shared, TA);

	cr_assert_eq(modify_ftrace_direct(&d, TB), 0);
	expect_call(dm_f6);
	cr_assert_eq(tc_call_target(dm_f6), shared, "shared site moved by a retarget");
	CALL6(1);
	cr_assert_eq(nhits(&hit_a), 0);
	cr_assert_eq(nhits(&hit_b), 1);
	cr_assert_eq(tc_count(&c), 1);

	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	expect_direct(dm_f6, TB);
	CALL6(2);
	cr_assert_eq(nhits(&hit_b), 2);
	cr_assert_eq(tc_count(&c), 1);
	cr_assert_eq(unregister_ftrace_direct(&d, TB, true), 0);
	expect_nop5(dm_f6);
}

/* BPF's use: ops_func answers ENABLE_SHARE_IPMODIFY_PEER by regenerating its
 * trampoline and calling modify_ftrace_direct_nolock() (direct_mutex held) */
static struct ftrace_ops peer_d;
static int peer_calls, peer_modify_ret = 1;

static notrace int peer_ops_func(struct ftrace_ops *op, unsigned long ip,
				 enum ftrace_ops_cmd cmd)
{
	peer_calls++;
	if (cmd == FTRACE_OPS_CMD_ENABLE_SHARE_IPMODIFY_PEER)
		return peer_modify_ret = modify_ftrace_direct_nolock(op, TB);
	if (cmd == FTRACE_OPS_CMD_DISABLE_SHARE_IPMODIFY_PEER)
		return modify_ftrace_direct_nolock(op, TA);
	return 0;
}

Test(modify_ftrace_direct_nolock, from_inside_ops_func)
{
	static struct tc_counter ipm;

	cr_assert_eq(usft_init(), 0);
	peer_d.ops_func = peer_ops_func;
	filter_ip(&peer_d, dm_f6);
	cr_assert_eq(register_ftrace_direct(&peer_d, TA), 0);
	tc_counter_init(&ipm, FTRACE_OPS_FL_IPMODIFY | FTRACE_OPS_FL_SAVE_REGS);
	cr_assert_eq(tc_set_filter(&ipm.ops, "dm_f6", 1), 0);

	cr_assert_eq(register_ftrace_function(&ipm.ops), 0);
	cr_assert_eq(peer_calls, 1);
	cr_assert_eq(peer_modify_ret, 0, "modify_ftrace_direct_nolock in ops_func = %d",
		     peer_modify_ret);
	cr_assert_eq(peer_d.direct_call, TB);
	expect_call(dm_f6);
	CALL6(1);
	cr_assert_eq(nhits(&hit_b), 1);
	cr_assert_eq(nhits(&hit_a), 0);
	cr_assert_eq(tc_count(&ipm), 1);

	cr_assert_eq(unregister_ftrace_function(&ipm.ops), 0);
	cr_assert_eq(peer_calls, 2);
	expect_direct(dm_f6, TA);
	CALL6(2);
	cr_assert_eq(nhits(&hit_a), 1);
	cr_assert_eq(tc_count(&ipm), 1);
	cr_assert_eq(unregister_ftrace_direct(&peer_d, TA, true), 0);
	expect_nop5(dm_f6);
	cr_assert_eq(tc_stat().disabled, 0);
}

/* ---- live retarget loop (ftrace-direct-modify) ---------------------------- */

#define NR_THREADS 4
#define NR_RETARGETS 500

static notrace void caller_thread(struct tc_pool *p, int idx, void *arg)
{
	long k = (long)(idx + 1) * 100000000L;

	while (!tc_pool_should_stop(p)) {
		if (!call6_ok(k))
			atomic_fetch_add(&p->errors, 1);
		atomic_fetch_add_explicit(&p->iters[idx], 1, memory_order_relaxed);
		k++;
	}
}

/*
 * @jmp: alternate between tramp_a (call mode) and tramp_jmp (jmp mode)
 * instead of tramp_a and tramp_b: e8 <-> e9 on the live site.
 */
static void retarget_loop(bool with_tracer, bool nolock, bool jmp)
{
	static struct ftrace_ops d;
	static struct tc_counter c;
	static struct tc_pool pool;
	unsigned long total = 0, site = tc_site(dm_f6);
	long ha, hb;
	int i, r;

	cr_assert_eq(usft_init(), 0);
	atomic_store(&expect_ret, site + TC_SITE_SIZE);
	direct_jmp_body = site + TC_SITE_SIZE;
	filter_ip(&d, dm_f6);
	cr_assert_eq(register_ftrace_direct(&d, TA), 0);
	if (with_tracer) {
		tc_counter_init(&c, 0);
		cr_assert_eq(tc_set_filter(&c.ops, "dm_f6", 1), 0);
		cr_assert_eq(register_ftrace_function(&c.ops), 0);
	}
	cr_assert_eq(tc_pool_start(&pool, NR_THREADS, caller_thread, NULL), 0);
	tc_pool_wait_iters(&pool, 10);
	for (i = 0; i < NR_RETARGETS; i++) {
		unsigned long to = (i & 1) ? TA : jmp ? ftrace_jmp_set(TJ) : TB;

		r = nolock ? modify_ftrace_direct_nolock(&d, to) : modify_ftrace_direct(&d, to);
		if (r) {
			tc_pool_stop(&pool);
			cr_assert_fail("retarget %d to %s = %d", i, (i & 1) ? "a" : "b", r);
		}
		/* let the callers through every so often so both targets see traffic */
		if (i % 50 == 0)
			tc_pool_wait_iters(&pool, 1);
	}
	tc_pool_wait_iters(&pool, 10);
	tc_pool_stop(&pool);

	for (i = 0; i < NR_THREADS; i++)
		total += atomic_load(&pool.iters[i]);
	ha = nhits(&hit_a);
	hb = jmp ? nhits(&hit_j) : nhits(&hit_b);
	cr_log_info("%d retargets, %lu calls: a %ld, %s %ld", NR_RETARGETS, total, ha,
		    jmp ? "jmp" : "b", hb);
	cr_assert_eq(atomic_load(&pool.errors), 0, "%lu calls returned a wrong value",
		     atomic_load(&pool.errors));
	cr_assert_eq((unsigned long)(ha + hb), total,
		     "calls %lu but trampoline hits a %ld + b/jmp %ld = %ld (%s)", total, ha, hb,
		     ha + hb, (unsigned long)(ha + hb) < total ? "lost" : "doubled");
	cr_assert_gt(ha, 0);
	cr_assert_gt(hb, 0);
	cr_assert_eq(atomic_load(&bad_ret), 0, "trampoline entered with a wrong [rsp]");
	if (with_tracer)
		cr_assert_eq((unsigned long)tc_count(&c), total, "tracer counted %ld of %lu",
			     tc_count(&c), total);

	/* NR_RETARGETS is even: back on a */
	if (with_tracer) {
		expect_call(dm_f6);
		cr_assert_neq(tc_call_target(dm_f6), TA);
		cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	}
	expect_direct(dm_f6, TA);
	CALL6(1);
	cr_assert_eq(nhits(&hit_a), ha + 1);
	cr_assert_eq(unregister_ftrace_direct(&d, TA, true), 0);
	expect_nop5(dm_f6);
	cr_assert_eq(tc_stat().nr_ops, 0);
	cr_assert_eq(tc_stat().disabled, 0);
}

Test(modify_ftrace_direct, retarget_loop_under_concurrent_calls)
{
	retarget_loop(false, false, false);
}

Test(modify_ftrace_direct, retarget_loop_with_a_tracer_on_the_site)
{
	retarget_loop(true, false, false);
}

Test(modify_ftrace_direct, retarget_loop_call_and_jmp_mode)
{
	retarget_loop(false, false, true);
}

Test(modify_ftrace_direct, retarget_loop_call_and_jmp_mode_with_a_tracer)
{
	retarget_loop(true, false, true);
}

Test(modify_ftrace_direct_nolock, retarget_loop_under_concurrent_calls)
{
	retarget_loop(false, true, false);
}
