// SPDX-License-Identifier: MIT
/*
 * Filter hashes: ftrace_set_filter() glob syntax (filter_parse_regex +
 * ftrace_match, func-filter-glob.tc), append vs reset, "!" removal, index
 * syntax, ftrace_set_filter_ip(s), ftrace_free_filter(), ftrace_location(),
 * and re-patching of a live ops.  Kernel: ftrace_set_filter(),
 * ftrace_match_records() (kernel/trace/ftrace.c), test.d/ftrace/func-filter-glob.tc.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_common.h"

#define DEF(name, k)                     \
	TRACEE long name(long x)         \
	{                                \
		TRACEE_BODY();           \
		return x * (k) + (k);    \
	}

DEF(cf_flt_alpha, 3)
DEF(cf_flt_alpine, 5)
DEF(cf_flt_beta, 7)
DEF(cf_flt_sched, 11)
DEF(cf_flt_Sched, 13)
DEF(cf_flt_schxdule, 17)
DEF(cf_flt_schedule, 19)
DEF(cf_flt_mutex_lock_zq, 23)
DEF(cf_flt_mutex_trylock_zq, 29)
DEF(cf_flt_pin_spinlock, 31)
DEF(cf_flt_gamma_tail9, 37)
DEF(cf_flt_delta_tail9, 41)
DEF(cf_flt_x_midword_y, 43)

enum {
	ALPHA, ALPINE, BETA, SCHED, SCHED_UP, SCHXDULE, SCHEDULE, MUTEX_LOCK,
	MUTEX_TRYLOCK, PIN_SPINLOCK, GAMMA_TAIL, DELTA_TAIL, MIDWORD, NR_FUNCS
};

static const tc_fn_t funcs[NR_FUNCS] = {
	cf_flt_alpha, cf_flt_alpine, cf_flt_beta, cf_flt_sched, cf_flt_Sched,
	cf_flt_schxdule, cf_flt_schedule, cf_flt_mutex_lock_zq,
	cf_flt_mutex_trylock_zq, cf_flt_pin_spinlock, cf_flt_gamma_tail9,
	cf_flt_delta_tail9, cf_flt_x_midword_y,
};

static const char *const names[NR_FUNCS] = {
	"cf_flt_alpha", "cf_flt_alpine", "cf_flt_beta", "cf_flt_sched", "cf_flt_Sched",
	"cf_flt_schxdule", "cf_flt_schedule", "cf_flt_mutex_lock_zq",
	"cf_flt_mutex_trylock_zq", "cf_flt_pin_spinlock", "cf_flt_gamma_tail9",
	"cf_flt_delta_tail9", "cf_flt_x_midword_y",
};

#define ALL_FUNCS ((1UL << NR_FUNCS) - 1)
#define B(i) (1UL << (i))

/* Compiled into an instrumented file, but never a site. */
notrace long cf_flt_notraced(long x)
{
	return x + 1;
}

long cf_flt_data_word = 42;

static struct tc_hits h;

static notrace void fmt_mask(unsigned long m, char *out, size_t len)
{
	size_t o = 0;

	out[0] = 0;
	for (int i = 0; i < NR_FUNCS && o < len; i++)
		if (m & B(i))
			o += snprintf(out + o, len - o, "%s ", names[i]);
}

/*
 * The registered hits ops must select exactly @want among the table: bytes
 * e8 for selected sites and nop5 for the others, one callback per call of a
 * selected function, none for the others.
 */
static void expect_live_selection(unsigned long want, const char *what)
{
	unsigned long got, bad;
	char a[512], b[512];

	for (int i = 0; i < NR_FUNCS; i++) {
		bool call = tc_is_call((const void *)funcs[i]);
		bool nop = tc_is_nop5((const void *)funcs[i]);

		if (want & B(i))
			cr_assert(call, "%s: site of %s should be a call", what, names[i]);
		else
			cr_assert(nop, "%s: site of %s should be nop5", what, names[i]);
	}
	got = tc_hits_mask(&h, funcs, &bad);
	fmt_mask(got, a, sizeof(a));
	fmt_mask(want, b, sizeof(b));
	cr_assert_eq(bad, 0, "%s: some function hit more than once per call", what);
	cr_assert_eq(got, want, "%s: selected { %s}, expected { %s}", what, a, b);
}

/* Register the hits ops (filter already set), check, unregister. */
static void expect_selection(unsigned long want, const char *what)
{
	int r = register_ftrace_function(&h.ops);

	cr_assert_eq(r, 0, "%s: register = %d", what, r);
	expect_live_selection(want, what);
	cr_assert_eq(unregister_ftrace_function(&h.ops), 0);
	for (int i = 0; i < NR_FUNCS; i++)
		cr_assert(tc_is_nop5((const void *)funcs[i]),
			  "%s: %s not nop5 after unregister", what, names[i]);
}

/* Start over with the one static hits ops: fresh the first time, reused after. */
static void init_hits(void)
{
	cr_assert_eq(usft_init(), 0);
	if (!h.ops.func) {
		tc_hits_init(&h, funcs, NR_FUNCS, 0);
	} else {
		cr_assert_not(h.ops.flags & FTRACE_OPS_FL_ENABLED);
		ftrace_free_filter(&h.ops);
		tc_hits_reset(&h);
	}
}

static void glob_selects(const char *glob, unsigned long want)
{
	int r;

	init_hits();
	r = tc_set_filter(&h.ops, glob, 1);
	cr_assert_eq(r, 0, "ftrace_set_filter(\"%s\") = %d", glob, r);
	expect_selection(want, glob);
	ftrace_free_filter(&h.ops);
}

/* ---- glob syntax -------------------------------------------------------- */

Test(ftrace_set_filter, exact_name)
{
	glob_selects("cf_flt_alpha", B(ALPHA));
}

Test(ftrace_set_filter, prefix_glob)
{
	glob_selects("cf_flt_alp*", B(ALPHA) | B(ALPINE));
}

Test(ftrace_set_filter, suffix_glob)
{
	glob_selects("*_tail9", B(GAMMA_TAIL) | B(DELTA_TAIL));
}

Test(ftrace_set_filter, substring_glob)
{
	glob_selects("*midword*", B(MIDWORD));
}

Test(ftrace_set_filter, full_glob_middle_star)
{
	glob_selects("cf_flt_sch*ule", B(SCHXDULE) | B(SCHEDULE));
}

Test(ftrace_set_filter, full_glob_two_stars)
{
	glob_selects("cf_flt_mutex*try*", B(MUTEX_TRYLOCK));
	glob_selects("cf_flt_*pin*lock", B(PIN_SPINLOCK));
}

Test(ftrace_set_filter, question_mark)
{
	glob_selects("cf_flt_sch?dule", B(SCHXDULE) | B(SCHEDULE));
}

Test(ftrace_set_filter, character_class)
{
	glob_selects("cf_flt_[Ss]ched", B(SCHED) | B(SCHED_UP));
	glob_selects("cf_flt_[S]ched", B(SCHED_UP));
}

Test(ftrace_set_filter, backslash_escape)
{
	int r;

	glob_selects("cf_flt_\\alpha", B(ALPHA));
	/* an escaped '*' is literal: no function has a '*' in its name */
	init_hits();
	errno = 0;
	r = tc_set_filter(&h.ops, "cf_flt_alp\\*", 1);
	cr_assert_eq(r, -EINVAL, "escaped star matched something (%d)", r);
	cr_assert_eq(errno, EINVAL);
}

Test(ftrace_set_filter, bang_removes_from_hash)
{
	init_hits();
	cr_assert_eq(tc_set_filter(&h.ops, "cf_flt_alp*", 1), 0);
	cr_assert_eq(tc_set_filter(&h.ops, "!cf_flt_alpine", 0), 0);
	expect_selection(B(ALPHA), "alp* then !alpine");
	cr_assert_eq(tc_set_filter(&h.ops, "cf_flt_sch* !cf_flt_schxdule", 0), 0);
	expect_selection(B(ALPHA) | B(SCHED) | B(SCHEDULE), "append sch* !schxdule");
	/* removing a function that is not in the hash matches and succeeds */
	cr_assert_eq(tc_set_filter(&h.ops, "!cf_flt_beta", 0), 0);
	expect_selection(B(ALPHA) | B(SCHED) | B(SCHEDULE), "!beta (absent)");
	/* a "!" glob that matches no function fails */
	errno = 0;
	cr_assert_eq(tc_set_filter(&h.ops, "!cf_flt_nosuchfunc_zz", 0), -EINVAL);
	cr_assert_eq(errno, EINVAL);
	expect_selection(B(ALPHA) | B(SCHED) | B(SCHEDULE), "after failed !");
}

Test(ftrace_set_filter, whitespace_separated_list)
{
	glob_selects("cf_flt_alpha cf_flt_beta\tcf_flt_sched\n", B(ALPHA) | B(BETA) | B(SCHED));
	glob_selects("  *_tail9   cf_flt_x_midword_y ", B(GAMMA_TAIL) | B(DELTA_TAIL) | B(MIDWORD));
}

Test(ftrace_set_filter, append_versus_reset)
{
	init_hits();
	cr_assert_eq(tc_set_filter(&h.ops, "cf_flt_alpha", 1), 0);
	cr_assert_eq(tc_set_filter(&h.ops, "cf_flt_beta", 0), 0);
	expect_selection(B(ALPHA) | B(BETA), "append");
	cr_assert_eq(tc_set_filter(&h.ops, "cf_flt_sched", 1), 0);
	expect_selection(B(SCHED), "reset");
	cr_assert_eq(tc_set_filter(&h.ops, "cf_flt_sched", 0), 0);
	expect_selection(B(SCHED), "appending a present entry");
}

Test(ftrace_set_filter, honours_len)
{
	const char *s = "cf_flt_alphaXYZ";

	init_hits();
	cr_assert_eq(ftrace_set_filter(&h.ops, (unsigned char *)s, 12, 1), 0);
	expect_selection(B(ALPHA), "len 12 of cf_flt_alphaXYZ");
}

Test(ftrace_set_filter, null_buf_with_reset_selects_everything)
{
	init_hits();
	cr_assert_eq(tc_set_filter(&h.ops, "cf_flt_alpha", 1), 0);
	cr_assert_eq(ftrace_set_filter(&h.ops, NULL, 0, 1), 0);
	cr_assert_eq(register_ftrace_function(&h.ops), 0);
	expect_live_selection(ALL_FUNCS, "NULL reset");
	cr_assert_eq(unregister_ftrace_function(&h.ops), 0);
	for (int i = 0; i < NR_FUNCS; i++)
		cr_assert(tc_is_nop5((const void *)funcs[i]));
}

Test(ftrace_set_filter, unmatched_glob_fails_and_changes_nothing)
{
	init_hits();
	cr_assert_eq(tc_set_filter(&h.ops, "cf_flt_alpha", 1), 0);

	errno = 0;
	cr_assert_eq(tc_set_filter(&h.ops, "cf_flt_nosuchfunc_zz", 0), -EINVAL);
	cr_assert_eq(errno, EINVAL);
	expect_selection(B(ALPHA), "after failed append");

	errno = 0;
	cr_assert_eq(tc_set_filter(&h.ops, "cf_flt_nosuchfunc_zz", 1), -EINVAL);
	cr_assert_eq(errno, EINVAL);
	expect_selection(B(ALPHA), "after failed reset");

	/* one unmatched glob in a list: -EINVAL, nothing changes */
	errno = 0;
	cr_assert_eq(tc_set_filter(&h.ops, "cf_flt_beta cf_flt_nosuchfunc_zz", 0), -EINVAL);
	cr_assert_eq(errno, EINVAL);
	expect_selection(B(ALPHA), "after failed list");

	/* a notrace function has no site: its name matches nothing */
	cr_assert_eq(tc_set_filter(&h.ops, "cf_flt_notraced", 0), -EINVAL);
	expect_selection(B(ALPHA), "after notrace name");
}

Test(ftrace_set_filter, unmatched_glob_on_live_ops_keeps_sites)
{
	init_hits();
	cr_assert_eq(tc_set_filter(&h.ops, "cf_flt_beta", 1), 0);
	cr_assert_eq(register_ftrace_function(&h.ops), 0);
	expect_live_selection(B(BETA), "before");
	cr_assert_eq(tc_set_filter(&h.ops, "cf_flt_nosuchfunc_zz", 1), -EINVAL);
	expect_live_selection(B(BETA), "after failed reset on live ops");
	cr_assert_eq(unregister_ftrace_function(&h.ops), 0);
}

Test(ftrace_set_filter, index_selects_one_function)
{
	struct usft_stats st;

	init_hits();
	cr_assert_eq(tc_set_filter(&h.ops, "1", 1), 0, "index 1 rejected");
	cr_assert_eq(register_ftrace_function(&h.ops), 0);
	st = tc_stat();
	cr_assert_eq(st.nr_enabled, 1, "index \"1\" enabled %lu sites", st.nr_enabled);
	cr_assert_eq(unregister_ftrace_function(&h.ops), 0);
	st = tc_stat();
	cr_assert_eq(st.nr_enabled, 0);

	errno = 0;
	cr_assert_eq(tc_set_filter(&h.ops, "99999999", 1), -EINVAL);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(tc_set_filter(&h.ops, "0", 1), -EINVAL, "index 0 is not 1-based");
}

/* ---- ftrace_location ---------------------------------------------------- */

Test(ftrace_location, maps_function_and_site)
{
	unsigned long fn = (unsigned long)cf_flt_alpha;
	unsigned long site;

	cr_assert_eq(usft_init(), 0);
	site = ftrace_location(fn);
	cr_assert_neq(site, 0);
	cr_assert(site >= fn && site < fn + 16, "site %#lx far from function %#lx", site, fn);
	cr_assert_eq(ftrace_location(site), site);
	cr_assert_eq(usft_lookup_name("cf_flt_alpha"), fn);
	for (int i = 0; i < NR_FUNCS; i++) {
		unsigned long s = ftrace_location((unsigned long)funcs[i]);

		cr_assert_neq(s, 0, "%s has no site", names[i]);
		for (int j = 0; j < i; j++)
			cr_assert_neq(s, ftrace_location((unsigned long)funcs[j]));
	}
}

static int cmp_ulong(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

	return (x > y) - (x < y);
}

/* set_graph_function matching without an ops: the same parser, sorted sites */
Test(usft_match_sites, globs_bang_count_and_errors)
{
	unsigned long ips[NR_FUNCS + 4], want[4];
	int n;

	cr_assert_eq(usft_init(), 0);
	n = usft_match_sites("cf_flt_sch*", -1, ips, NR_FUNCS + 4);
	cr_assert_eq(n, 3, "cf_flt_sch* selected %d sites", n);	/* sched schxdule schedule */
	want[0] = ftrace_location((unsigned long)cf_flt_sched);
	want[1] = ftrace_location((unsigned long)cf_flt_schxdule);
	want[2] = ftrace_location((unsigned long)cf_flt_schedule);
	qsort(want, 3, sizeof(want[0]), cmp_ulong);
	cr_assert_arr_eq(ips, want, 3 * sizeof(want[0]));
	/* a '!' token removes from what the buffer selected so far */
	cr_assert_eq(usft_match_sites("cf_flt_sch* !cf_flt_schxdule", -1, ips, 4), 2);
	cr_assert_eq(usft_match_sites("cf_flt_alpha*junk", 13, NULL, 0), 1, "len honoured");
	cr_assert_eq(usft_match_sites("cf_flt_*", -1, NULL, 0), NR_FUNCS, "count only");
	cr_assert_eq(usft_match_sites("cf_flt_*", -1, ips, 2), NR_FUNCS, "more than max");
	cr_assert_lt(ips[0], ips[1]);
	errno = 0;
	cr_assert_eq(usft_match_sites("cf_flt_nothing*", -1, ips, 4), -EINVAL);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(usft_match_sites(NULL, -1, ips, 4), -EINVAL);
	cr_assert_eq(usft_match_sites("cf_flt_alpha", -1, NULL, 4), -EINVAL);
}

Test(ftrace_location, rejects_non_sites)
{
	cr_assert_eq(usft_init(), 0);
	cr_assert_eq(ftrace_location((unsigned long)cf_flt_notraced), 0);
	cr_assert_eq(ftrace_location((unsigned long)&cf_flt_data_word), 0);
	cr_assert_eq(ftrace_location((unsigned long)strlen), 0);
	cr_assert_eq(ftrace_location(0), 0);
}

Test(usft_site_bytes, all_sites_start_as_nop5)
{
	unsigned char b[TC_SITE_SIZE];

	cr_assert_eq(usft_init(), 0);
	for (int i = 0; i < NR_FUNCS; i++)
		cr_assert(tc_is_nop5((const void *)funcs[i]), "%s not nop5 at start", names[i]);
	errno = 0;
	cr_assert_eq(usft_site_bytes((unsigned long)&cf_flt_data_word, b, TC_SITE_SIZE), -EINVAL);
	cr_assert_eq(usft_site_bytes(ftrace_location((unsigned long)cf_flt_beta), b, TC_SITE_SIZE),
		     TC_SITE_SIZE);
	cr_assert_eq(memcmp(b, tc_nop5, TC_SITE_SIZE), 0);
}

/* ---- ftrace_set_filter_ip(s) ------------------------------------------- */

Test(ftrace_set_filter_ip, accepts_function_and_site_address)
{
	init_hits();
	cr_assert_eq(ftrace_set_filter_ip(&h.ops, (unsigned long)cf_flt_alpha, 0, 1), 0);
	cr_assert_eq(ftrace_set_filter_ip(&h.ops, tc_site(cf_flt_beta), 0, 0), 0);
	expect_selection(B(ALPHA) | B(BETA), "by function and by site");

	/* both spellings name the same entry */
	cr_assert_eq(ftrace_set_filter_ip(&h.ops, tc_site(cf_flt_alpha), 1, 0), 0);
	cr_assert_eq(ftrace_set_filter_ip(&h.ops, (unsigned long)cf_flt_alpha, 1, 0), -ENOENT);
	expect_selection(B(BETA), "after removal");
}

Test(ftrace_set_filter_ip, rejects_non_site_ip)
{
	init_hits();
	cr_assert_eq(ftrace_set_filter_ip(&h.ops, (unsigned long)cf_flt_alpha, 0, 1), 0);
	errno = 0;
	cr_assert_eq(ftrace_set_filter_ip(&h.ops, (unsigned long)cf_flt_notraced, 0, 0), -EINVAL);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(ftrace_set_filter_ip(&h.ops, (unsigned long)&cf_flt_data_word, 0, 0),
		     -EINVAL);
	cr_assert_eq(ftrace_set_filter_ip(&h.ops, (unsigned long)strlen, 0, 0), -EINVAL);
	expect_selection(B(ALPHA), "after rejected ips");
}

Test(ftrace_set_filter_ip, remove_absent_ip_returns_enoent)
{
	init_hits();
	errno = 0;
	cr_assert_eq(ftrace_set_filter_ip(&h.ops, (unsigned long)cf_flt_alpha, 1, 0), -ENOENT);
	cr_assert_eq(errno, ENOENT);
	cr_assert_eq(ftrace_set_filter_ip(&h.ops, (unsigned long)cf_flt_beta, 0, 0), 0);
	cr_assert_eq(ftrace_set_filter_ip(&h.ops, (unsigned long)cf_flt_alpha, 1, 0), -ENOENT);
	expect_selection(B(BETA), "after failed removal");
}

Test(ftrace_set_filter_ip, reset_replaces_hash)
{
	init_hits();
	cr_assert_eq(tc_set_filter(&h.ops, "cf_flt_alp*", 1), 0);
	cr_assert_eq(ftrace_set_filter_ip(&h.ops, (unsigned long)cf_flt_beta, 0, 1), 0);
	expect_selection(B(BETA), "ip with reset");
	cr_assert_eq(ftrace_set_filter_ip(&h.ops, (unsigned long)cf_flt_sched, 0, 0), 0);
	expect_selection(B(BETA) | B(SCHED), "ip appended");
}

Test(ftrace_set_filter_ips, batch_add_and_remove)
{
	unsigned long ips[3] = {
		(unsigned long)cf_flt_alpha, tc_site(cf_flt_beta), (unsigned long)cf_flt_sched,
	};

	init_hits();
	cr_assert_eq(ftrace_set_filter_ips(&h.ops, ips, 3, 0, 1), 0);
	expect_selection(B(ALPHA) | B(BETA) | B(SCHED), "batch add");
	cr_assert_eq(ftrace_set_filter_ips(&h.ops, ips, 2, 1, 0), 0);
	expect_selection(B(SCHED), "batch remove");
}

Test(ftrace_set_filter_ips, batch_is_all_or_nothing)
{
	unsigned long bad_add[3] = {
		(unsigned long)cf_flt_alpha, (unsigned long)cf_flt_notraced,
		(unsigned long)cf_flt_beta,
	};
	unsigned long bad_del[2] = {
		(unsigned long)cf_flt_sched, (unsigned long)cf_flt_beta,
	};

	init_hits();
	cr_assert_eq(ftrace_set_filter_ip(&h.ops, (unsigned long)cf_flt_sched, 0, 1), 0);
	errno = 0;
	cr_assert_eq(ftrace_set_filter_ips(&h.ops, bad_add, 3, 0, 0), -EINVAL);
	cr_assert_eq(errno, EINVAL);
	expect_selection(B(SCHED), "after failed batch add");
	cr_assert_eq(ftrace_set_filter_ips(&h.ops, bad_add, 3, 0, 1), -EINVAL);
	expect_selection(B(SCHED), "after failed batch add with reset");

	/* removing sched succeeds alone but beta is absent: nothing removed */
	errno = 0;
	cr_assert_eq(ftrace_set_filter_ips(&h.ops, bad_del, 2, 1, 0), -ENOENT);
	cr_assert_eq(errno, ENOENT);
	expect_selection(B(SCHED), "after failed batch remove");
}

/* ---- ftrace_free_filter ------------------------------------------------- */

Test(ftrace_free_filter, empties_filter_and_notrace)
{
	init_hits();
	cr_assert_eq(tc_set_filter(&h.ops, "cf_flt_alpha cf_flt_beta", 1), 0);
	cr_assert_eq(tc_set_notrace(&h.ops, "cf_flt_beta", 1), 0);
	expect_selection(B(ALPHA), "filter minus notrace");
	ftrace_free_filter(&h.ops);
	/* the filter hash is empty now: nothing to remove */
	cr_assert_eq(ftrace_set_filter_ip(&h.ops, (unsigned long)cf_flt_alpha, 1, 0), -ENOENT);
	/* empty filter = everything, empty notrace = nothing excluded */
	cr_assert_eq(register_ftrace_function(&h.ops), 0);
	expect_live_selection(ALL_FUNCS, "after ftrace_free_filter");
	cr_assert_eq(unregister_ftrace_function(&h.ops), 0);
}

Test(ftrace_free_filter, ignored_while_registered)
{
	init_hits();
	cr_assert_eq(tc_set_filter(&h.ops, "cf_flt_alpha", 1), 0);
	cr_assert_eq(register_ftrace_function(&h.ops), 0);
	ftrace_free_filter(&h.ops);
	expect_live_selection(B(ALPHA), "free_filter on a live ops");
	cr_assert_eq(unregister_ftrace_function(&h.ops), 0);
	expect_selection(B(ALPHA), "filter kept");
}

/* ---- live updates -------------------------------------------------------- */

Test(ftrace_set_filter, live_ops_repatches_immediately)
{
	init_hits();
	cr_assert_eq(tc_set_filter(&h.ops, "cf_flt_alpha", 1), 0);
	cr_assert_eq(register_ftrace_function(&h.ops), 0);
	expect_live_selection(B(ALPHA), "start");

	cr_assert_eq(tc_set_filter(&h.ops, "cf_flt_beta", 1), 0);
	expect_live_selection(B(BETA), "reset to beta");

	cr_assert_eq(ftrace_set_filter_ip(&h.ops, (unsigned long)cf_flt_alpha, 0, 0), 0);
	expect_live_selection(B(ALPHA) | B(BETA), "add alpha by ip");

	cr_assert_eq(ftrace_set_filter_ip(&h.ops, (unsigned long)cf_flt_beta, 1, 0), 0);
	expect_live_selection(B(ALPHA), "remove beta by ip");

	cr_assert_eq(tc_set_filter(&h.ops, "*_tail9", 0), 0);
	expect_live_selection(B(ALPHA) | B(GAMMA_TAIL) | B(DELTA_TAIL), "append *_tail9");

	cr_assert_eq(tc_set_filter(&h.ops, "!cf_flt_gamma_tail9", 0), 0);
	expect_live_selection(B(ALPHA) | B(DELTA_TAIL), "!gamma");

	cr_assert_eq(ftrace_set_filter(&h.ops, NULL, 0, 1), 0);
	expect_live_selection(ALL_FUNCS, "NULL reset = all");

	cr_assert_eq(tc_set_filter(&h.ops, "cf_flt_sched", 1), 0);
	expect_live_selection(B(SCHED), "back to one");

	cr_assert_eq(tc_set_notrace(&h.ops, "cf_flt_sched", 1), 0);
	expect_live_selection(0, "notrace the only one");

	cr_assert_eq(unregister_ftrace_function(&h.ops), 0);
	for (int i = 0; i < NR_FUNCS; i++)
		cr_assert(tc_is_nop5((const void *)funcs[i]), "%s", names[i]);
	cr_assert_eq(tc_stat().nr_enabled, 0);
}
