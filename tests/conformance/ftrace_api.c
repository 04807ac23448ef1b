// SPDX-License-Identifier: MIT
/*
 * The rest of the kernel's include/linux/ftrace.h API: the global ops
 * (ftrace_set_global_filter/_notrace), ftrace_location_range(),
 * ftrace_lookup_symbols(), ftrace_kill()/ftrace_is_dead(), the hash
 * helpers (ftrace_hash_count, add_ftrace_hash_entry, ftrace_hash_remove,
 * ftrace_find_rec_direct), ftrace_stub_direct_tramp, and the ftrace_regs
 * stack accessors (ftrace_regs_has_args, ftrace_regs_get_kernel_stack_nth,
 * ftrace_regs_get_argument past the argument registers).  Also the direct
 * half of the kernel's trace_selftest_startup_function_graph(): a direct
 * call to ftrace_stub_direct_tramp and a graph tracer on the same function.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <usft/fgraph.h>
#include "test_common.h"

#define DEF(name, k)                     \
	TRACEE long name(long x)         \
	{                                \
		TRACEE_BODY();           \
		return x * (k) + (k);    \
	}

DEF(cf_api_one, 3)
DEF(cf_api_two, 5)
DEF(cf_api_three, 7)

TRACEE long cf_api_args10(long a0, long a1, long a2, long a3, long a4, long a5, long a6,
			  long a7, long a8, long a9)
{
	TRACEE_BODY();
	return a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9;
}

/* ---- global ops ---------------------------------------------------------- */

Test(ftrace_set_global_filter, drives_ops_sharing_the_global_hashes)
{
	static struct tc_counter c;

	tc_counter_init(&c, 0);
	ftrace_ops_set_global_filter(&c.ops);
	errno = 0;
	ftrace_set_global_filter((unsigned char *)"cf_api_one cf_api_two", -1, 1);
	cr_assert_eq(errno, 0);
	ftrace_set_global_notrace((unsigned char *)"cf_api_two", -1, 1);
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	cf_api_one(1);
	cf_api_two(1);
	cf_api_three(1);
	cr_assert_eq(tc_count(&c), 1, "global filter minus notrace: %ld calls", tc_count(&c));
	/* changing the global filter re-patches the enabled ops */
	ftrace_set_global_filter((unsigned char *)"cf_api_three", -1, 0);
	ftrace_set_global_notrace(NULL, 0, 1);
	expect_call(cf_api_two);
	expect_call(cf_api_three);
	cf_api_two(1);
	cf_api_three(1);
	cr_assert_eq(tc_count(&c), 3);
	/* a glob that matches nothing: errno, nothing changes */
	errno = 0;
	ftrace_set_global_filter((unsigned char *)"cf_api_no_such_function", -1, 1);
	cr_assert_eq(errno, EINVAL);
	cf_api_one(1);
	cr_assert_eq(tc_count(&c), 4);
	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	expect_nop5(cf_api_one);
}

/* ---- lookups -------------------------------------------------------------- */

Test(ftrace_location_range, first_site_at_least_partly_inside)
{
	unsigned long site = tc_site(cf_api_one);

	cr_assert_neq(site, 0);
	cr_assert_eq(ftrace_location_range(site, site), site);
	cr_assert_eq(ftrace_location_range(site + 1, site + 2), site, "a partial overlap");
	cr_assert_eq(ftrace_location_range(site - 1, site), site);
	cr_assert_eq(ftrace_location_range(site + TC_SITE_SIZE, site + TC_SITE_SIZE), 0);
	cr_assert_eq(ftrace_location_range(0x1000, 0x2000), 0);
}

Test(ftrace_lookup_symbols, sites_of_sorted_names)
{
	const char *names[] = { "cf_api_one", "cf_api_three", "cf_api_two" };
	const char *some[] = { "cf_api_one", "cf_api_zz_missing" };
	unsigned long addrs[3], two[2];

	cr_assert_eq(ftrace_lookup_symbols(names, 3, addrs), 0);
	cr_assert_eq(addrs[0], tc_site(cf_api_one));
	cr_assert_eq(addrs[1], tc_site(cf_api_three));
	cr_assert_eq(addrs[2], tc_site(cf_api_two));
	errno = 0;
	cr_assert_eq(ftrace_lookup_symbols(some, 2, two), -ESRCH);
	cr_assert_eq(errno, ESRCH);
	cr_assert_eq(two[0], tc_site(cf_api_one));
	cr_assert_eq(two[1], 0);
	cr_assert_eq(ftrace_lookup_symbols(names, 0, addrs), 0);
}

/* ---- kill switch ------------------------------------------------------------ */

Test(ftrace_kill, kills_the_runtime_without_writing_text)
{
	static struct tc_counter c, late;
	unsigned char before[TC_SITE_SIZE], after[TC_SITE_SIZE];

	tc_counter_init(&c, 0);
	tc_counter_init(&late, 0);
	cr_assert_eq(ftrace_is_dead(), 0);
	cr_assert_eq(tc_set_filter(&c.ops, "cf_api_one", 1), 0);
	cr_assert_eq(tc_set_filter(&late.ops, "cf_api_two", 1), 0);
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	tc_read_site(cf_api_one, before);
	ftrace_kill();
	cr_assert_neq(ftrace_is_dead(), 0);
	cr_assert_eq(register_ftrace_function(&late.ops), -ENODEV);
	cr_assert_eq(unregister_ftrace_function(&c.ops), -ENODEV);
	expect_nop5(cf_api_two);
	cr_assert_eq(cf_api_one(1), 6);
	tc_read_site(cf_api_one, after);
	cr_assert_eq(memcmp(before, after, sizeof(before)), 0, "a site changed after ftrace_kill()");
}

/* ---- hash helpers, ftrace_find_rec_direct, ftrace_stub_direct_tramp ---- */

#define STUB ((unsigned long)ftrace_stub_direct_tramp)

Test(ftrace_hash, caller_owned_entries_in_the_batch_api)
{
	static struct ftrace_ops b;
	struct ftrace_func_entry e[2] = {
		{ .ip = tc_site(cf_api_one), .direct = STUB },
		{ .ip = tc_site(cf_api_two), .direct = STUB },
	};
	struct ftrace_hash *h = alloc_ftrace_hash(3);

	cr_assert_not_null(h);
	cr_assert_eq(ftrace_hash_count(NULL), 0);
	cr_assert_eq(ftrace_hash_count(h), 0);
	add_ftrace_hash_entry(h, &e[0]);
	add_ftrace_hash_entry(h, &e[1]);
	cr_assert_eq(ftrace_hash_count(h), 2);
	cr_assert_eq(update_ftrace_direct_add(&b, h), 0);
	cr_assert_eq(ftrace_find_rec_direct(tc_site(cf_api_one)), STUB);
	cr_assert_eq(ftrace_find_rec_direct(tc_site(cf_api_two)), STUB);
	cr_assert_eq(ftrace_find_rec_direct(tc_site(cf_api_three)), 0);
	expect_call(cf_api_one);
	cr_assert_eq(cf_api_one(2), 9, "the stub trampoline lost the body");
	cr_assert_eq(cf_api_two(2), 15);
	cr_assert_eq(update_ftrace_direct_del(&b, h), 0);
	cr_assert_eq(ftrace_find_rec_direct(tc_site(cf_api_one)), 0);
	expect_nop5(cf_api_one);
	ftrace_hash_remove(h);
	cr_assert_eq(ftrace_hash_count(h), 0);
	free_ftrace_hash(h);	/* frees no entry: they are on this stack */
	cr_assert_eq(e[0].ip, tc_site(cf_api_one));
}

/*
 * trace_selftest_startup_function_graph()'s direct half: a direct ops on
 * ftrace_stub_direct_tramp and a graph tracer on the same function; both
 * live, then each removed, the function keeps working throughout.
 */
static atomic_int g_entries, g_returns;

static notrace int g_ent(struct ftrace_graph_ent *t, struct fgraph_ops *g, struct ftrace_regs *f)
{
	atomic_fetch_add(&g_entries, 1);
	return 1;
}

static notrace void g_ret(struct ftrace_graph_ret *t, struct fgraph_ops *g, struct ftrace_regs *f)
{
	if (t->retval == 14)
		atomic_fetch_add(&g_returns, 1);
}

Test(trace_selftest_startup_function_graph, direct_stub_and_graph_on_one_function)
{
	static struct ftrace_ops d;
	static struct fgraph_ops g = { .entryfunc = g_ent, .retfunc = g_ret };

	cr_assert_eq(ftrace_set_filter_ip(&d, (unsigned long)cf_api_three, 0, 0), 0);
	cr_assert_eq(register_ftrace_direct(&d, STUB), 0);
	expect_call(cf_api_three);
	cr_assert_eq(cf_api_three(1), 14);
	cr_assert_eq(tc_set_filter(&g.ops, "cf_api_three", 1), 0);
	cr_assert_eq(register_ftrace_graph(&g), 0);
	cr_assert_eq(cf_api_three(1), 14);
	cr_assert_eq(cf_api_three(0), 7);
	cr_assert_eq(atomic_load(&g_entries), 2);
	cr_assert_eq(atomic_load(&g_returns), 1);
	cr_assert_eq(cf_api_three(1), 14);
	cr_assert_eq(atomic_load(&g_returns), 2);
	unregister_ftrace_graph(&g);
	cr_assert_eq(atomic_load(&g_entries), 3);
	cr_assert_eq(cf_api_three(1), 14);
	cr_assert_eq(atomic_load(&g_entries), 3);
	cr_assert_eq(ftrace_find_rec_direct(tc_site(cf_api_three)), STUB);
	cr_assert_eq(unregister_ftrace_direct(&d, STUB, true), 0);
	expect_nop5(cf_api_three);
	cr_assert_eq(cf_api_three(1), 14);
}

/* ---- ftrace_regs: stack arguments ------------------------------------------ */

static unsigned long seen_args[10], seen_nth[4];
static int seen_has_args;

static notrace void args_probe(unsigned long ip, unsigned long pip, struct ftrace_ops *op,
			       struct ftrace_regs *fregs)
{
	for (unsigned int i = 0; i < 10; i++)
		seen_args[i] = ftrace_regs_get_argument(fregs, i);
	for (unsigned int i = 0; i < 4; i++)
		seen_nth[i] = ftrace_regs_get_kernel_stack_nth(fregs, i);
	seen_has_args = ftrace_regs_has_args(fregs);
}

Test(ftrace_regs_get_kernel_stack_nth, reads_stack_arguments)
{
	static struct ftrace_ops ops = { .func = args_probe };

	cr_assert_eq(tc_set_filter(&ops, "cf_api_args10", 1), 0);
	cr_assert_eq(register_ftrace_function(&ops), 0);
	cr_assert_eq(cf_api_args10(10, 11, 12, 13, 14, 15, 16, 17, 18, 19), 145);
	cr_assert_eq(unregister_ftrace_function(&ops), 0);
	cr_assert(seen_has_args);
	for (int i = 0; i < 6; i++)
		cr_assert_eq(seen_args[i], 10UL + i, "argument %d", i);
#if defined(__x86_64__)
	/* SysV: a0-a5 in registers, a6.. above the return address */
	for (int i = 6; i < 10; i++)
		cr_assert_eq(seen_args[i], 10UL + i, "stack argument %d", i);
	for (int i = 1; i < 4; i++)
		cr_assert_eq(seen_nth[i], 15UL + i, "stack slot %d", i);
#elif defined(__aarch64__)
	/* AAPCS64: a0-a7 in registers, a8.. at the entry sp; get_argument
	 * stops at 8 as the kernel's */
	cr_assert_eq(seen_args[6], 16);
	cr_assert_eq(seen_args[7], 17);
	cr_assert_eq(seen_args[8], 0);
	cr_assert_eq(seen_nth[0], 18);
	cr_assert_eq(seen_nth[1], 19);
#endif
}
