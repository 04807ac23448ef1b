// SPDX-License-Identifier: MIT
/*
 * The conversion of a freshly loaded object's compiler NOPs to the
 * canonical disabled form happens while other threads already run through
 * them (gcc emits five 1-byte NOPs: a thread can be stopped between two of
 * them).  Each cycle loads the object, starts callers, lets usft convert
 * (INT3 protocol + moving threads stopped inside the NOPs past the site),
 * traces, and unloads.  Every call must return its right value.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "test_common.h"

#define CYCLES 150
typedef long (*fn_t)(long);
static fn_t fns[4];

static notrace long expect(int k, long x)
{
	switch (k) {
	case 0: return x + 3;
	case 1: return x * 3;
	case 2: return x - 7;
	default: return x ^ 0x55;
	}
}

static notrace void caller(struct tc_pool *p, int idx, void *arg)
{
	long x = idx;

	while (!tc_pool_should_stop(p)) {
		for (int k = 0; k < 4; k++)
			if (fns[k](x) != expect(k, x))
				atomic_fetch_add(&p->errors, 1);
		x++;
		atomic_fetch_add_explicit(&p->iters[idx], 1, memory_order_relaxed);
	}
}

Test(stress, gcc_nops_converted_while_threads_run, .timeout = 600)
{
	static const char *const names[4] = { "st_nop_a", "st_nop_b", "st_nop_c", "st_nop_d" };
	long total_calls = 0;

	cr_assert_eq(usft_init(), 0);
	for (int cycle = 0; cycle < CYCLES; cycle++) {
		struct tc_pool pool;
		unsigned char b[TC_SITE_SIZE];
		void *h = dlopen(ST_NOPS_PATH, RTLD_NOW | RTLD_LOCAL);

		cr_assert_not_null(h, "%s", dlerror());
		for (int k = 0; k < 4; k++) {
			fns[k] = (fn_t)dlsym(h, names[k]);
			cr_assert_not_null(fns[k]);
		}
		cr_assert_eq(tc_pool_start(&pool, 3, caller, NULL), 0);
		tc_pool_wait_iters(&pool, 2000);
		/* the first usft call after dlopen converts the object's NOPs */
		cr_assert_neq(ftrace_location((unsigned long)fns[0]), 0);
		cr_assert_eq(usft_site_bytes((unsigned long)fns[1], b, TC_SITE_SIZE), TC_SITE_SIZE);
		cr_assert_eq(memcmp(b, tc_nop5, TC_SITE_SIZE), 0);
		tc_pool_wait_iters(&pool, 2000);
		struct tc_counter *c = calloc(1, sizeof(*c));

		cr_assert_not_null(c);
		tc_counter_init(c, cycle % 2 ? FTRACE_OPS_FL_SAVE_REGS : 0);
		cr_assert_eq(tc_set_filter(&c->ops, "st_nop_*", 1), 0);
		cr_assert_eq(register_ftrace_function(&c->ops), 0);
		tc_pool_wait_iters(&pool, 2000);
		cr_assert_eq(unregister_ftrace_function(&c->ops), 0);
		tc_pool_stop(&pool);
		cr_assert_eq(atomic_load(&pool.errors), 0, "cycle %d: wrong results", cycle);
		cr_assert_gt(tc_count(c), 0);
		total_calls += tc_count(c);
		free(c);
		dlclose(h);
	}
	cr_log_info("%d cycles, %ld traced calls", CYCLES, total_calls);
}
