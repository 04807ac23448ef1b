// SPDX-License-Identifier: MIT
/*
 * One test per point where usft was compared with the kernel's API
 * (kernel/trace/ftrace.c, kernel/trace/fgraph.c, include/linux/ftrace.h):
 * either usft now behaves as the kernel does, or the difference is kept on
 * purpose and written down in docs/design.md ("Kept differences from the
 * kernel's API"); the test pins whichever it is, so neither can change by
 * accident.  Each test's name says which.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <usft/fgraph.h>
#include <usft/trampoline.h>
#include "test_common.h"

extern const char tramp_a[], tramp_b[], tramp_jmp[];
extern unsigned long direct_jmp_body;
#define TA ((unsigned long)tramp_a)
#define TB ((unsigned long)tramp_b)

static atomic_long hits_a, hits_b;
notrace void direct_hit_a(unsigned long arg0, unsigned long ret)
{
	atomic_fetch_add(&hits_a, 1);
}
notrace void direct_hit_b(unsigned long arg0, unsigned long ret)
{
	atomic_fetch_add(&hits_b, 1);
}
notrace void direct_hit_jmp(unsigned long arg0, unsigned long ret) { }

#define DEF(name, k)                     \
	TRACEE long name(long x)         \
	{                                \
		TRACEE_BODY();           \
		return x * (k) + (k);    \
	}

DEF(cf_kd_alpha, 3)
DEF(cf_kd_blpha, 5)
DEF(cf_kd_clpha, 7)
DEF(cf_kd_direct1, 11)
DEF(cf_kd_direct2, 13)

static struct ftrace_hash *one_hash(const void *fn, unsigned long direct)
{
	struct ftrace_hash *h = alloc_ftrace_hash(2);

	cr_assert_not_null(h);
	cr_assert_not_null(add_ftrace_hash_entry_direct(h, fn ? tc_site(fn) : 0x1000, direct));
	return h;
}

/* ---- filters ------------------------------------------------------------ */

/* kept: a whitespace list, as a write to set_ftrace_filter (the kernel's
 * ftrace_set_filter() takes one glob, "a b" is -EINVAL there) */
Test(kept, ftrace_set_filter_takes_a_whitespace_list)
{
	static struct tc_counter c;

	tc_counter_init(&c, 0);
	cr_assert_eq(tc_set_filter(&c.ops, "cf_kd_alpha cf_kd_blpha", 1), 0);
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	cf_kd_alpha(1);
	cf_kd_blpha(1);
	cf_kd_clpha(1);
	cr_assert_eq(tc_count(&c), 2);
	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
}

/* kept: ":mod:" works on any ops (no trace_array), loaded objects only */
Test(kept, mod_command_on_any_ops_without_caching)
{
	static struct tc_counter c;

	tc_counter_init(&c, 0);
	/* the main program is module "main" */
	cr_assert_eq(tc_set_filter(&c.ops, "cf_kd_alpha:mod:main", 1), 0);
	/* an object that is not loaded matches nothing and is not cached */
	cr_assert_eq(tc_set_filter(&c.ops, "cf_kd_blpha:mod:libkd_not_loaded", 0), -EINVAL);
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	cf_kd_alpha(1);
	cf_kd_blpha(1);
	cr_assert_eq(tc_count(&c), 1);
	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
}

/*
 * kernel: ftrace_hash_empty() is false for a filter hash that waits for a
 * cached ":mod:" (FTRACE_HASH_FL_MOD): it selects nothing until a function
 * is in it; module_exists() decides what is cached
 */
Test(kernel, cached_mod_filter_selects_nothing)
{
	static struct tc_counter c;

	tc_counter_init(&c, 0);
	cr_assert(usft_module_exists("main"));
	cr_assert_not(usft_module_exists("libkd_not_loaded"));
	cr_assert_not(usft_module_exists(NULL));
	cr_assert_eq(usft_ftrace_set_regex_mod(&c.ops, NULL, 0, 1, 1, true), 0);
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	cf_kd_alpha(1);
	cf_kd_blpha(1);
	cr_assert_eq(tc_count(&c), 0, "a waiting filter traced %ld calls", tc_count(&c));
	/* a function added (the flag kept): that one only */
	cr_assert_eq(usft_ftrace_set_regex_mod(&c.ops, (unsigned char *)"cf_kd_alpha", -1, 0, 1,
					       true), 0);
	cf_kd_alpha(1);
	cf_kd_blpha(1);
	cr_assert_eq(tc_count(&c), 1);
	/* the flag dropped with the hash emptied: every function again */
	cr_assert_eq(usft_ftrace_set_regex_mod(&c.ops, NULL, 0, 1, 1, false), 0);
	cf_kd_alpha(1);
	cf_kd_blpha(1);
	cr_assert_geq(tc_count(&c), 3);
	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	/* the notrace side never takes the flag */
	cr_assert_eq(usft_ftrace_set_regex_mod(&c.ops, NULL, 0, 1, 0, true), 0);
}

/* kernel: lib/glob.c inverts a class with '!' only: "[^b]" is the class {^, b} */
Test(kernel, glob_class_caret_is_literal)
{
	static struct tc_counter c;

	tc_counter_init(&c, 0);
	cr_assert_eq(tc_set_filter(&c.ops, "cf_kd_[^b]lpha", 1), 0);
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	cf_kd_alpha(1);
	cf_kd_blpha(1);
	cf_kd_clpha(1);
	cr_assert_eq(tc_count(&c), 1, "[^b] selected %ld of alpha/blpha/clpha", tc_count(&c));
	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	/* '!' still inverts */
	cr_assert_eq(tc_set_filter(&c.ops, "cf_kd_[!b]lpha", 1), 0);
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	cf_kd_alpha(1);
	cf_kd_blpha(1);
	cf_kd_clpha(1);
	cr_assert_eq(tc_count(&c), 3);
	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
}

/* kernel: ftrace_set_hash() skips a NULL ip array (reset still empties) */
Test(kernel, ftrace_set_filter_ips_null_proceeds)
{
	static struct tc_counter c;

	tc_counter_init(&c, 0);
	cr_assert_eq(tc_set_filter(&c.ops, "cf_kd_alpha", 1), 0);
	cr_assert_eq(ftrace_set_filter_ips(&c.ops, NULL, 3, 0, 0), 0);
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	cf_kd_alpha(1);
	cf_kd_blpha(1);
	cr_assert_eq(tc_count(&c), 1, "the filter changed");
	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	/* with reset: the empty filter, i.e. every function */
	cr_assert_eq(ftrace_set_filter_ips(&c.ops, NULL, 3, 0, 1), 0);
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	cf_kd_blpha(1);
	cr_assert_geq(tc_count(&c), 2);
	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
}

/* ---- register / unregister ------------------------------------------------ */

/* kept: a NULL callback is refused (the kernel registers it and faults on
 * the first call) */
Test(kept, register_null_func_is_einval)
{
	static struct ftrace_ops ops;

	cr_assert_eq(tc_set_filter(&ops, "cf_kd_alpha", 1), 0);
	errno = 0;
	cr_assert_eq(register_ftrace_function(&ops), -EINVAL);
	cr_assert_eq(errno, EINVAL);
	cr_assert_not(ops.flags & FTRACE_OPS_FL_ENABLED);
	cf_kd_alpha(1);
}

#if defined(__aarch64__)
/* kept: arm64 accepts SAVE_REGS without WITH_REGS; ftrace_get_regs() is NULL */
static atomic_int regs_seen, calls_seen;
static notrace void regs_probe(unsigned long ip, unsigned long pip, struct ftrace_ops *op,
			       struct ftrace_regs *fregs)
{
	atomic_fetch_add(&calls_seen, 1);
	if (ftrace_get_regs(fregs))
		atomic_fetch_add(&regs_seen, 1);
}

Test(kept, arm64_save_regs_registers_without_pt_regs)
{
	static struct ftrace_ops ops = { .func = regs_probe, .flags = FTRACE_OPS_FL_SAVE_REGS };

	cr_assert_eq(tc_set_filter(&ops, "cf_kd_alpha", 1), 0);
	cr_assert_eq(register_ftrace_function(&ops), 0);
	cf_kd_alpha(1);
	cr_assert_eq(atomic_load(&calls_seen), 1);
	cr_assert_eq(atomic_load(&regs_seen), 0);
	cr_assert_eq(unregister_ftrace_function(&ops), 0);
}
#endif

/* kept: usft_set_ftrace_enabled(0) still turns tracing off */
Test(kept, ftrace_enabled_off_is_accepted)
{
	static struct tc_counter c;

	tc_counter_init(&c, 0);
	cr_assert_eq(tc_set_filter(&c.ops, "cf_kd_alpha", 1), 0);
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	cr_assert_eq(usft_set_ftrace_enabled(0), 0);
	cf_kd_alpha(1);
	cr_assert_eq(tc_count(&c), 0);
	cr_assert_eq(usft_set_ftrace_enabled(1), 0);
	cf_kd_alpha(1);
	cr_assert_eq(tc_count(&c), 1);
	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
}

/* kernel: remove_ftrace_ops()'s -1 for an ENABLED ops missing from the list */
Test(kernel, unregister_enabled_ops_not_on_list_is_minus_one)
{
	static struct tc_counter c;

	tc_counter_init(&c, 0);
	cr_assert_eq(unregister_ftrace_function(&c.ops), -EBUSY, "not ENABLED: -EBUSY");
	c.ops.flags |= FTRACE_OPS_FL_ENABLED;	/* a corrupt ops, as the kernel's WARN path */
	errno = 0;
	cr_assert_eq(unregister_ftrace_function(&c.ops), -1);
	cr_assert_eq(errno, 1);
	c.ops.flags &= ~FTRACE_OPS_FL_ENABLED;
}

/* ---- fgraph --------------------------------------------------------------- */

static int kd_ent(struct ftrace_graph_ent *t, struct fgraph_ops *g, struct ftrace_regs *f)
{
	return 0;
}

/* kernel: fgraph_lru_alloc_index() failing is -ENOSPC */
Test(kernel, register_ftrace_graph_all_slots_used_is_enospc)
{
	static struct fgraph_ops g[FGRAPH_ARRAY_SIZE + 1];
	int i;

	for (i = 0; i <= FGRAPH_ARRAY_SIZE; i++) {
		g[i].entryfunc = kd_ent;
		cr_assert_eq(tc_set_filter(&g[i].ops, "cf_kd_clpha", 1), 0);
	}
	for (i = 0; i < FGRAPH_ARRAY_SIZE; i++)
		cr_assert_eq(register_ftrace_graph(&g[i]), 0, "slot %d", i);
	errno = 0;
	cr_assert_eq(register_ftrace_graph(&g[FGRAPH_ARRAY_SIZE]), -ENOSPC);
	cr_assert_eq(errno, ENOSPC);
	cr_assert_eq(register_ftrace_graph(&g[0]), -EBUSY, "already registered");
	for (i = 0; i < FGRAPH_ARRAY_SIZE; i++)
		unregister_ftrace_graph(&g[i]);
	cr_assert_eq(register_ftrace_graph(&g[FGRAPH_ARRAY_SIZE]), 0);
	unregister_ftrace_graph(&g[FGRAPH_ARRAY_SIZE]);
}

/* kept: each fgraph_ops is registered as its own ftrace_ops, not a SUBOP */
Test(kept, fgraph_ops_is_its_own_ftrace_ops)
{
	static struct fgraph_ops g = { .entryfunc = kd_ent };
	struct usft_stats s0 = tc_stat(), s1;

	cr_assert_eq(tc_set_filter(&g.ops, "cf_kd_clpha", 1), 0);
	cr_assert_eq(register_ftrace_graph(&g), 0);
	s1 = tc_stat();
	cr_assert(g.ops.flags & FTRACE_OPS_FL_ENABLED);
	cr_assert(g.ops.flags & FTRACE_OPS_FL_GRAPH);
	cr_assert_not(g.ops.flags & FTRACE_OPS_FL_SUBOP);
	cr_assert_eq(s1.nr_ops, s0.nr_ops + 1);
	unregister_ftrace_graph(&g);
}

/* kept: int depth and the calltime/rettime fields (the kernel: long depth,
 * __packed, no times in ftrace_graph_ret since 6.14) */
Test(kept, ftrace_graph_ent_layout)
{
	struct ftrace_graph_ent e;
	struct ftrace_graph_ret r;

	cr_assert_eq(sizeof(e.depth), sizeof(int));
	cr_assert_eq(sizeof(r.depth), sizeof(int));
	cr_assert_eq(offsetof(struct ftrace_graph_ent, calltime), 16);
	cr_assert_eq(sizeof(r.rettime), 8);
}

/* ---- direct calls ----------------------------------------------------------- */

/* kernel: register_ftrace_direct() ORs MULTI_FLAGS into the caller's flags */
Test(kernel, register_ftrace_direct_keeps_caller_flags)
{
	static struct ftrace_ops d = { .flags = FTRACE_OPS_FL_RECURSION };

	cr_assert_eq(ftrace_set_filter_ip(&d, (unsigned long)cf_kd_direct1, 0, 0), 0);
	cr_assert_eq(register_ftrace_direct(&d, TA), 0);
	cr_assert(d.flags & FTRACE_OPS_FL_RECURSION, "flags %#lx lost RECURSION", d.flags);
	cr_assert(d.flags & FTRACE_OPS_FL_DIRECT);
	cr_assert(d.flags & FTRACE_OPS_FL_SAVE_REGS);
	atomic_store(&hits_a, 0);
	cr_assert_eq(cf_kd_direct1(1), 22);
	cr_assert_eq(atomic_load(&hits_a), 1);
	cr_assert_eq(unregister_ftrace_direct(&d, TA, true), 0);
}

/* kept: a 0 target is refused (the kernel would make the site call 0) */
Test(kept, direct_zero_target_is_einval)
{
	static struct ftrace_ops d, b;
	struct ftrace_hash *h;

	cr_assert_eq(ftrace_set_filter_ip(&d, (unsigned long)cf_kd_direct1, 0, 0), 0);
	cr_assert_eq(register_ftrace_direct(&d, 0), -EINVAL);
	h = one_hash(cf_kd_direct1, 0);
	cr_assert_eq(update_ftrace_direct_add(&b, h), -EINVAL);
	free_ftrace_hash(h);
	cr_assert_not(b.flags & FTRACE_OPS_FL_ENABLED);
}

/*
 * kd_odd_tramp: a function symbol at an odd address, as the second of two
 * trampolines in one asm() block whose first ends in a one-byte ret (one
 * filler byte here, on either arch; it is never executed).
 */
__asm__(".pushsection .text, \"ax\"\n"
	".p2align 4\n"
	".globl kd_even_tramp\n.type kd_even_tramp, STT_FUNC\n"
	"kd_even_tramp: .byte 0\n"
	".size kd_even_tramp, . - kd_even_tramp\n"
	".globl kd_odd_tramp\n.type kd_odd_tramp, STT_FUNC\n"
	"kd_odd_tramp: .byte 0, 0, 0, 0\n"
	".size kd_odd_tramp, . - kd_odd_tramp\n"
	".popsection\n");
extern const char kd_odd_tramp[];

/* kept: an odd direct address that starts a function symbol is refused (the
 * kernel takes every odd address as a jmp request: ftrace_jmp_set()) */
Test(kept, direct_odd_symbol_start_is_einval)
{
	static struct ftrace_ops d;
	unsigned long odd = (unsigned long)kd_odd_tramp;

	__asm__("" : "+r"(odd));	/* the compiler takes symbols to be even */
	cr_assert(odd & 1, "kd_odd_tramp is at %#lx", odd);
	cr_assert_eq(ftrace_set_filter_ip(&d, (unsigned long)cf_kd_direct2, 0, 0), 0);
	cr_assert_eq(register_ftrace_direct(&d, odd), -EINVAL);
	cr_assert_not(d.flags & FTRACE_OPS_FL_ENABLED);
	cr_assert_eq(ftrace_find_rec_direct(tc_site(cf_kd_direct2)), 0);
	/* a jmp request (start + 1 of a trampoline) is still taken */
	cr_assert_eq(register_ftrace_direct(&d, ftrace_jmp_set((unsigned long)tramp_jmp)), 0);
	cr_assert_eq(modify_ftrace_direct(&d, odd), -EINVAL);
	cr_assert_eq(unregister_ftrace_direct(&d, ftrace_jmp_set((unsigned long)tramp_jmp), true), 0);
}

/* kept: a non-site ip in update_ftrace_direct_add() is refused (the kernel
 * keeps it in the filter and direct_functions, where it matches nothing) */
Test(kept, direct_add_non_site_ip_is_einval)
{
	static struct ftrace_ops b;
	struct ftrace_hash *h = one_hash(NULL, TA);

	cr_assert_eq(update_ftrace_direct_add(&b, h), -EINVAL);
	free_ftrace_hash(h);
	cr_assert_not(b.flags & FTRACE_OPS_FL_ENABLED);
}

/* kernel: update_ftrace_direct_del() wants each entry's exact target */
Test(kernel, direct_del_compares_the_exact_target)
{
	static struct ftrace_ops b;
	struct ftrace_hash *h = one_hash(cf_kd_direct2, TB), *bad;

	cr_assert_eq(update_ftrace_direct_add(&b, h), 0);
	bad = one_hash(cf_kd_direct2, 0);
	cr_assert_eq(update_ftrace_direct_del(&b, bad), -EINVAL, "0 matched a target");
	free_ftrace_hash(bad);
	bad = one_hash(cf_kd_direct2, ftrace_jmp_set(TB));
	cr_assert_eq(update_ftrace_direct_del(&b, bad), -EINVAL, "the jmp bit was ignored");
	free_ftrace_hash(bad);
	bad = one_hash(cf_kd_direct1, TB);
	cr_assert_eq(update_ftrace_direct_del(&b, bad), -EINVAL, "an entry not attached");
	free_ftrace_hash(bad);
	atomic_store(&hits_b, 0);
	cr_assert_eq(cf_kd_direct2(1), 26);
	cr_assert_eq(atomic_load(&hits_b), 1);
	cr_assert_eq(update_ftrace_direct_del(&b, h), 0);
	free_ftrace_hash(h);
	cr_assert_not(b.flags & FTRACE_OPS_FL_ENABLED);
}

/* kernel: the direct API's -EBUSY when a function already has a direct call */
static unsigned long kd_prog(const unsigned long *ctx, void *cookie)
{
	return 0;
}

Test(kernel, tramp_attach_on_a_direct_function_is_ebusy)
{
	static struct ftrace_ops d;
	struct usft_tramp_opts o = { .sz = sizeof(o), .nr_args = 1 };

	cr_assert_eq(ftrace_set_filter_ip(&d, (unsigned long)cf_kd_direct1, 0, 0), 0);
	cr_assert_eq(register_ftrace_direct(&d, TA), 0);
	errno = 0;
	cr_assert_null(usft_tramp_attach((void *)cf_kd_direct1, USFT_TRAMP_FENTRY, kd_prog,
					 NULL, &o));
	cr_assert_eq(errno, EBUSY);
	cr_assert_eq(unregister_ftrace_direct(&d, TA, true), 0);
}
