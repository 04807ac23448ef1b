// SPDX-License-Identifier: MIT
/*
 * Callbacks may call the read-only lookups (usft_kallsyms_lookup,
 * ftrace_location, usft_site_bytes) while another thread unregisters ops:
 * the unregister waits for callbacks under ftrace_lock, so lookups must not
 * need it (the kernel's kallsyms_lookup takes no ftrace lock either).
 */
#include <string.h>
#include "test_common.h"

TRACEE long cf_cb_api_f(long x)
{
	TRACEE_BODY();
	return x + 5;
}

static atomic_long named;

static notrace void lookup_cb(unsigned long ip, unsigned long pip, struct ftrace_ops *op,
			      struct ftrace_regs *fregs)
{
	unsigned char b[TC_SITE_SIZE];
	const char *n = usft_kallsyms_lookup(ip, NULL);

	if (n && !strcmp(n, "cf_cb_api_f") && ftrace_location(ip) == ip &&
	    usft_site_bytes(ip, b, TC_SITE_SIZE) == TC_SITE_SIZE)
		atomic_fetch_add(&named, 1);
}

static notrace void caller(struct tc_pool *p, int idx, void *arg)
{
	while (!tc_pool_should_stop(p)) {
		if (cf_cb_api_f(idx) != idx + 5)
			atomic_fetch_add(&p->errors, 1);
		atomic_fetch_add_explicit(&p->iters[idx], 1, memory_order_relaxed);
	}
}

Test(callbacks, may_look_up_names_while_ops_unregister, .timeout = 60)
{
	static struct ftrace_ops lookup, churn;
	struct tc_pool pool;

	cr_assert_eq(usft_init(), 0);
	lookup.func = lookup_cb;
	cr_assert_eq(tc_set_filter(&lookup, "cf_cb_api_f", 1), 0);
	cr_assert_eq(register_ftrace_function(&lookup), 0);
	cr_assert_eq(tc_pool_start(&pool, 2, caller, NULL), 0);
	churn.func = lookup_cb;
	cr_assert_eq(tc_set_filter(&churn, "cf_cb_api_f", 1), 0);
	for (int i = 0; i < 200; i++) {
		cr_assert_eq(register_ftrace_function(&churn), 0);
		cr_assert_eq(unregister_ftrace_function(&churn), 0);
	}
	tc_pool_stop(&pool);
	cr_assert_eq(unregister_ftrace_function(&lookup), 0);
	cr_assert_eq(atomic_load(&pool.errors), 0);
	cr_assert_gt(atomic_load(&named), 0);
}
