// SPDX-License-Identifier: MIT
/*
 * Bad input in an object's site table: an entry pointing outside
 * executable text is skipped with a warning; an entry pointing at bytes
 * that are not a compiler NOP disables that record with a warning and
 * leaves its bytes alone.  The runtime stays alive and the object's real
 * sites work.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "test_common.h"

typedef long (*fn_t)(long);

static char logbuf[8192];
static size_t loglen;

static notrace void capture(enum usft_log_level level, const char *fmt, va_list ap)
{
	int n = vsnprintf(logbuf + loglen, sizeof(logbuf) - loglen, fmt, ap);

	if (n > 0 && loglen + (size_t)n < sizeof(logbuf))
		loglen += (size_t)n;
}

Test(site_table, corrupt_entries_are_skipped_with_a_warning)
{
	static struct tc_counter c;
	unsigned char before[8], after[8];
	void *h;
	fn_t good1, good2, bad;

	cr_assert_eq(usft_init(), 0);
	usft_set_print(capture);
	h = dlopen(CF_CORRUPT_PATH, RTLD_NOW);
	cr_assert_not_null(h, "%s", dlerror());
	good1 = (fn_t)dlsym(h, "cf_bad_good1");
	good2 = (fn_t)dlsym(h, "cf_bad_good2");
	bad = (fn_t)dlsym(h, "cf_bad_asm");
	cr_assert(good1 && good2 && bad);
	memcpy(before, (const void *)bad, sizeof(before));

	/* the next call loads the object's table */
	cr_assert_neq(ftrace_location((unsigned long)good1), 0);
	cr_assert(strstr(logbuf, "not in executable text; skipped"),
		  "no warning for the data entry; log: %s", logbuf);
	cr_assert(strstr(logbuf, "not a patchable NOP; disabled"),
		  "no warning for the non-NOP entry; log: %s", logbuf);
	cr_assert_eq(tc_stat().disabled, 0, "the runtime died on bad input");

	/* the bad record is never selected or written */
	{
		static struct ftrace_ops probe = { .func = tc_counter_func };

		cr_assert_eq(tc_set_filter(&probe, "cf_bad_asm", 1), -EINVAL);
	}
	tc_counter_init(&c, 0);
	cr_assert_eq(tc_set_filter(&c.ops, "cf_bad_*", 1), 0);
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	expect_call(good1);
	expect_call(good2);
	cr_assert_eq(good1(1), 101);
	cr_assert_eq(good2(1), 201);
	cr_assert_eq(bad(1), 2);
	cr_assert_eq(tc_count(&c), 2);
	memcpy(after, (const void *)bad, sizeof(after));
	cr_assert_eq(memcmp(before, after, sizeof(before)), 0, "the non-NOP entry's bytes changed");
	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	expect_nop5(good1);
	usft_set_print(NULL);
	dlclose(h);
}

/*
 * kernel add_rec_by_index(): an index counts every record, DISABLED ones
 * too, so some index names the disabled record (which is then in the
 * filter but never written: ftrace_check_record() skips DISABLED).
 */
Test(site_table, filter_index_counts_disabled_records)
{
	static struct tc_counter c;
	unsigned char before[8], after[8];
	unsigned long ip, bad_idx = 0;
	char idx[24];
	void *h;
	fn_t bad;

	cr_assert_eq(usft_init(), 0);
	usft_set_print(capture);
	h = dlopen(CF_CORRUPT_PATH, RTLD_NOW);
	cr_assert_not_null(h, "%s", dlerror());
	bad = (fn_t)dlsym(h, "cf_bad_asm");
	cr_assert_not_null(bad);
	memcpy(before, (const void *)bad, sizeof(before));
	for (unsigned long n = 1; n < 1000000; n++) {
		snprintf(idx, sizeof(idx), "%lu", n);
		if (usft_match_sites(idx, -1, &ip, 1) != 1)
			break;
		if (ip >= (unsigned long)bad && ip < (unsigned long)bad + 8)
			bad_idx = n;
	}
	cr_assert_neq(bad_idx, 0, "no index names the disabled record");
	snprintf(idx, sizeof(idx), "%lu", bad_idx);
	tc_counter_init(&c, 0);
	cr_assert_eq(tc_set_filter(&c.ops, idx, 1), 0);
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	cr_assert_eq(bad(1), 2);
	memcpy(after, (const void *)bad, sizeof(after));
	cr_assert_eq(memcmp(before, after, sizeof(before)), 0, "the disabled record was written");
	cr_assert_eq(tc_count(&c), 0);
	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	usft_set_print(NULL);
	dlclose(h);
}
