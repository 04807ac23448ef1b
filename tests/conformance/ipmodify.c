// SPDX-License-Identifier: MIT
/*
 * FTRACE_OPS_FL_IPMODIFY: at most one IPMODIFY ops per function, no
 * "all functions" filter, no notrace hash; a callback may redirect the
 * resumed ip (livepatch) or return early (error injection).
 * Kernel: __ftrace_hash_update_ipmodify() (kernel/trace/ftrace.c);
 * usft/asm/x86_64.h accessors.
 */
#include <errno.h>
#include <string.h>

#include "test_common.h"

TRACEE long cf_ipm_orig(long x)
{
	TRACEE_BODY();
	return x + 1;
}

TRACEE long cf_ipm_patched(long x)
{
	TRACEE_BODY();
	return x * 1000;
}

TRACEE long cf_ipm_other(long x)
{
	TRACEE_BODY();
	return x + 2;
}

static atomic_long orig_body_runs;

TRACEE long cf_ipm_injectable(long x)
{
	TRACEE_BODY();
	atomic_fetch_add(&orig_body_runs, 1);
	return x + 3;
}

static void filter(struct ftrace_ops *ops, const char *g)
{
	cr_assert_eq(tc_set_filter(ops, g, 1), 0, "%s", g);
}

static struct tc_counter a, b;

static void init_ab(unsigned long extra)
{
	cr_assert_eq(usft_init(), 0);
	tc_counter_init(&a, FTRACE_OPS_FL_IPMODIFY | extra);
	tc_counter_init(&b, FTRACE_OPS_FL_IPMODIFY | extra);
}

Test(ftrace_ops_ipmodify, rejects_all_functions_filter)
{
	init_ab(0);
	errno = 0;
	cr_assert_eq(register_ftrace_function(&a.ops), -EINVAL);
	cr_assert_eq(errno, EINVAL);
	cr_assert_not(a.ops.flags & FTRACE_OPS_FL_ENABLED);
	expect_nop5(cf_ipm_orig);
	cr_assert_eq(tc_stat().nr_enabled, 0);
}

Test(ftrace_ops_ipmodify, rejects_notrace)
{
	init_ab(0);
	filter(&a.ops, "cf_ipm_orig");
	errno = 0;
	cr_assert_eq(tc_set_notrace(&a.ops, "cf_ipm_other", 1), -EINVAL);
	cr_assert_eq(errno, EINVAL);
}

Test(ftrace_ops_ipmodify, one_ipmodify_ops_per_function)
{
	init_ab(0);
	filter(&a.ops, "cf_ipm_orig");
	filter(&b.ops, "cf_ipm_orig");
	cr_assert_eq(register_ftrace_function(&a.ops), 0);
	errno = 0;
	cr_assert_eq(register_ftrace_function(&b.ops), -EBUSY);
	cr_assert_eq(errno, EBUSY);
	cr_assert_not(b.ops.flags & FTRACE_OPS_FL_ENABLED);
	cf_ipm_orig(0);
	cr_assert_eq(tc_count(&a), 1);
	cr_assert_eq(tc_count(&b), 0, "rejected ops is called");

	/* after the owner leaves, the other may take the function */
	cr_assert_eq(unregister_ftrace_function(&a.ops), 0);
	expect_nop5(cf_ipm_orig);
	cr_assert_eq(register_ftrace_function(&b.ops), 0);
	cf_ipm_orig(0);
	cr_assert_eq(tc_count(&b), 1);
	cr_assert_eq(unregister_ftrace_function(&b.ops), 0);
}

Test(ftrace_ops_ipmodify, coexists_with_plain_ops_and_other_functions)
{
	static struct tc_counter plain;

	init_ab(0);
	tc_counter_init(&plain, 0);
	filter(&a.ops, "cf_ipm_orig");
	filter(&b.ops, "cf_ipm_other");
	filter(&plain.ops, "cf_ipm_orig cf_ipm_other");
	cr_assert_eq(register_ftrace_function(&a.ops), 0);
	cr_assert_eq(register_ftrace_function(&b.ops), 0);
	cr_assert_eq(register_ftrace_function(&plain.ops), 0);
	cf_ipm_orig(0);
	cf_ipm_other(0);
	cr_assert_eq(tc_count(&a), 1);
	cr_assert_eq(tc_count(&b), 1);
	cr_assert_eq(tc_count(&plain), 2);
	cr_assert_eq(unregister_ftrace_function(&plain.ops), 0);
	cr_assert_eq(unregister_ftrace_function(&b.ops), 0);
	cr_assert_eq(unregister_ftrace_function(&a.ops), 0);
	expect_nop5(cf_ipm_orig);
	expect_nop5(cf_ipm_other);
}

Test(ftrace_ops_ipmodify, conflicting_filter_change_keeps_old_filter)
{
	init_ab(0);
	filter(&a.ops, "cf_ipm_orig");
	filter(&b.ops, "cf_ipm_other");
	cr_assert_eq(register_ftrace_function(&a.ops), 0);
	cr_assert_eq(register_ftrace_function(&b.ops), 0);

	errno = 0;
	cr_assert_eq(tc_set_filter(&b.ops, "cf_ipm_orig", 0), -EBUSY);
	cr_assert_eq(errno, EBUSY);
	cf_ipm_orig(0);
	cf_ipm_other(0);
	cr_assert_eq(tc_count(&a), 1);
	cr_assert_eq(tc_count(&b), 1, "b's filter changed despite -EBUSY");

	/* "all functions" is refused on a live IPMODIFY ops too */
	cr_assert_eq(ftrace_set_filter(&b.ops, NULL, 0, 1), -EINVAL);
	cf_ipm_other(0);
	cr_assert_eq(tc_count(&b), 2);
	expect_nop5(cf_ipm_patched);

	cr_assert_eq(unregister_ftrace_function(&a.ops), 0);
	cr_assert_eq(tc_set_filter(&b.ops, "cf_ipm_orig", 0), 0);
	cf_ipm_orig(0);
	cr_assert_eq(tc_count(&b), 3);
	cr_assert_eq(unregister_ftrace_function(&b.ops), 0);
}

/* ---- redirecting callbacks --------------------------------------------- */

static notrace void redirect_func(unsigned long ip, unsigned long pip,
				  struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct tc_counter *c = container_of(op, struct tc_counter, ops);

	atomic_fetch_add(&c->count, 1);
	/* livepatch: klp_arch_set_pc() */
	ftrace_regs_set_instruction_pointer(fregs, (unsigned long)cf_ipm_patched);
}

static void check_redirect(unsigned long flags, bool shared)
{
	static struct tc_counter lp;

	tc_counter_init(&lp, FTRACE_OPS_FL_IPMODIFY | flags);
	lp.ops.func = redirect_func;
	filter(&lp.ops, "cf_ipm_orig");
	cr_assert_eq(register_ftrace_function(&lp.ops), 0);
	cr_assert_eq(cf_ipm_orig(7), 7000, "flags %#lx: call not redirected", flags);
	cr_assert_eq(cf_ipm_orig(8), 8000);
	cr_assert_eq(tc_count(&lp), 2);
	cr_assert_eq(cf_ipm_patched(2), 2000);
	cr_assert_eq(unregister_ftrace_function(&lp.ops), 0);
	if (shared)
		expect_call(cf_ipm_orig);	/* the other ops still wants it */
	else
		expect_nop5(cf_ipm_orig);
	cr_assert_eq(cf_ipm_orig(7), 8);
}

Test(ftrace_regs_set_instruction_pointer, redirects_with_save_regs)
{
	cr_assert_eq(usft_init(), 0);
	check_redirect(FTRACE_OPS_FL_SAVE_REGS, false);
}

Test(ftrace_regs_set_instruction_pointer, redirects_with_args_only)
{
	cr_assert_eq(usft_init(), 0);
	check_redirect(0, false);
}

Test(ftrace_regs_set_instruction_pointer, redirects_on_a_shared_site)
{
	static struct tc_counter plain;

	cr_assert_eq(usft_init(), 0);
	tc_counter_init(&plain, 0);
	filter(&plain.ops, "cf_ipm_orig");
	cr_assert_eq(register_ftrace_function(&plain.ops), 0);
	check_redirect(FTRACE_OPS_FL_SAVE_REGS, true);
	cr_assert_eq(tc_count(&plain), 3);
	cr_assert_eq(unregister_ftrace_function(&plain.ops), 0);
	expect_nop5(cf_ipm_orig);
}

static notrace void inject_func(unsigned long ip, unsigned long pip,
				struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct tc_counter *c = container_of(op, struct tc_counter, ops);

	atomic_fetch_add(&c->count, 1);
	ftrace_regs_set_return_value(fregs, (unsigned long)-EIO);
	ftrace_override_function_with_return(fregs);
}

static void check_override(unsigned long flags)
{
	static struct tc_counter fei;

	atomic_store(&orig_body_runs, 0);
	tc_counter_init(&fei, FTRACE_OPS_FL_IPMODIFY | flags);
	fei.ops.func = inject_func;
	filter(&fei.ops, "cf_ipm_injectable");
	cr_assert_eq(register_ftrace_function(&fei.ops), 0);
	cr_assert_eq(cf_ipm_injectable(1), -EIO, "flags %#lx: return not overridden", flags);
	cr_assert_eq(cf_ipm_injectable(2), -EIO);
	cr_assert_eq(atomic_load(&orig_body_runs), 0, "original body ran");
	cr_assert_eq(tc_count(&fei), 2);
	cr_assert_eq(unregister_ftrace_function(&fei.ops), 0);
	cr_assert_eq(cf_ipm_injectable(1), 4);
	cr_assert_eq(atomic_load(&orig_body_runs), 1);
}

Test(ftrace_override_function_with_return, skips_the_body_with_save_regs)
{
	cr_assert_eq(usft_init(), 0);
	check_override(FTRACE_OPS_FL_SAVE_REGS);
}

Test(ftrace_override_function_with_return, skips_the_body_with_args_only)
{
	cr_assert_eq(usft_init(), 0);
	check_override(0);
}
