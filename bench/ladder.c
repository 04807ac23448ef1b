// SPDX-License-Identifier: MIT
/*
 * usft-bench-ladder - the dispatch ladder of seed 000 ("arm64: ftrace:
 * support DIRECT_CALLS without CALL_OPS") replayed in userspace:
 *
 *   untraced         the traced function with its site disabled (nop5)
 *   stub_call        the physical limit: a function whose entry is a real
 *                    `call` to an empty stub, compiled in
 *   direct_near      a direct trampoline (empty) in branch range: site calls it
 *   direct_near_jmp  the same in jmp mode (site jumps, trampoline jumps on)
 *   direct_far       the trampoline out of branch range (tramp_placement=far):
 *                    site -> ftrace_regs_caller -> call_direct_funcs -> tramp
 *   list_N           direct_far plus N-1 unrelated ops registered elsewhere:
 *                    the shared path walks every ops (the seed's N rows)
 *   ops_tramp        one ops with an empty callback through its own trampoline
 *   callsite_N       list_N with per_callsite_ops=1: the site walks only its
 *                    own ops (a path the kernel does not have)
 *
 * Every case is set up, timed and torn down in turn, round after round
 * (A B C ... A B C ...), and the median of the rounds is reported, so all
 * numbers come from one run on one machine state.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <usft/ftrace.h>
#include <usft/usft.h>
#include "cpu.h"
#include "ratio.h"

TRACEE long bench_target(long x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

TRACEE long bench_other(long x)
{
	__asm__ volatile("" ::: "memory");
	return x + 2;
}

extern long bench_stub_call_target(long x);
extern const char bench_jmp_tramp_start[], bench_jmp_tramp_end[];
extern const char bench_ret_tramp_start[], bench_ret_tramp_end[];

static unsigned long site;
static unsigned long near_ret, far_ret, near_jmp;
static struct ftrace_ops direct_ops;
static struct ftrace_ops cb_ops;
static struct ftrace_ops unrelated[64];
static unsigned long unrelated_hits;

static notrace void empty_cb(unsigned long ip, unsigned long pip, struct ftrace_ops *op,
			     struct ftrace_regs *fregs)
{
}

static notrace void unrelated_cb(unsigned long ip, unsigned long pip, struct ftrace_ops *op,
				 struct ftrace_regs *fregs)
{
	unrelated_hits++;
}

static notrace void die(const char *what, int err)
{
	fprintf(stderr, "usft-bench-ladder: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

static notrace int attach_direct(unsigned long addr)
{
	int r = ftrace_set_filter_ip(&direct_ops, site, 0, 1);

	if (!r)
		r = register_ftrace_direct(&direct_ops, addr);
	return r;
}

static notrace void detach_direct(unsigned long addr)
{
	int r = unregister_ftrace_direct(&direct_ops, addr, true);

	if (r)
		die("unregister_ftrace_direct", r);
}

static notrace int attach_unrelated(int n)
{
	for (int i = 0; i < n; i++) {
		int r;

		memset(&unrelated[i], 0, sizeof(unrelated[i]));
		unrelated[i].func = unrelated_cb;
		r = ftrace_set_filter_ip(&unrelated[i], (unsigned long)bench_other, 0, 1);
		if (!r)
			r = register_ftrace_function(&unrelated[i]);
		if (r)
			return r;
	}
	return 0;
}

static notrace void detach_unrelated(int n)
{
	for (int i = 0; i < n; i++) {
		unregister_ftrace_function(&unrelated[i]);
		ftrace_free_filter(&unrelated[i]);
	}
}

struct bcase {
	const char *name;
	long (*fn)(long);
	int kind;		/* 0 none, 1 direct, 2 ops */
	unsigned long *tramp;
	bool jmp;
	int unrelated;
	bool callsite;		/* per_callsite_ops=1 for this case */
	double samples[64];
};

static notrace int setup(struct bcase *c)
{
	int r = usft_set_option("per_callsite_ops", c->callsite ? "1" : "0");

	if (r)
		return r;

	if (c->unrelated)
		r = attach_unrelated(c->unrelated);
	if (!r && c->kind == 1)
		r = attach_direct(c->jmp ? ftrace_jmp_set(*c->tramp) : *c->tramp);
	if (!r && c->kind == 2) {
		memset(&cb_ops, 0, sizeof(cb_ops));
		cb_ops.func = empty_cb;
		r = ftrace_set_filter_ip(&cb_ops, site, 0, 1);
		if (!r)
			r = register_ftrace_function(&cb_ops);
	}
	return r;
}

static notrace void teardown(struct bcase *c)
{
	if (c->kind == 1)
		detach_direct(c->jmp ? ftrace_jmp_set(*c->tramp) : *c->tramp);
	if (c->kind == 2) {
		unregister_ftrace_function(&cb_ops);
		ftrace_free_filter(&cb_ops);
	}
	if (c->unrelated)
		detach_unrelated(c->unrelated);
}

/* ns per call, the median of chunks (bench_time_calls()) */
static notrace double time_calls(long (*fn)(long), long n)
{
	long acc;
	double ns = bench_time_calls(fn, n, &acc);

	if (acc != n * (n - 1) / 2 + n && fn != bench_other)
		die("wrong results while timing", EIO);
	return ns;
}

static notrace int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static notrace double median(double *v, int n)
{
	double t[64];

	memcpy(t, v, n * sizeof(*t));
	qsort(t, n, sizeof(*t), cmpd);
	return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}


static notrace unsigned long copy_tramp(const char *start, const char *end, unsigned long body,
					const char *placement)
{
	char code[64];
	size_t len = (size_t)(end - start);
	void *p;

	memcpy(code, start, len);
	if (body)
		memcpy(code + len - 8, &body, 8);
	if (usft_set_option("tramp_placement", placement))
		die("tramp_placement", errno);
	p = usft_alloc_trampoline(code, len, site);
	if (!p)
		die("usft_alloc_trampoline", errno);
	return (unsigned long)p;
}

/* branch reach of the site: rel32 (x86-64), BL +-128 MiB (arm64) */
static notrace bool in_rel32(unsigned long from, unsigned long to)
{
#if defined(__aarch64__)
	long d = (long)(to - from);

	return d >= -(128L << 20) && d < (128L << 20);
#else
	long d = (long)(to - (from + 5));

	return d == (long)(int)d;
#endif
}

int main(int argc, char **argv)
{
	double scale = 1.0;
	int rounds = 7, r, i;
	long calls;
	bool quick = false;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--scale") && i + 1 < argc)
			scale = atof(argv[++i]);
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--quick"))
			quick = true;
		else {
			fprintf(stderr, "usage: usft-bench-ladder [--quick] [--scale F] [--rounds N]\n");
			return 2;
		}
	}
	if (quick && rounds > 5)
		rounds = 5;
	if (rounds < 1 || rounds > 64)
		rounds = 7;
	calls = (long)(2000000 * scale);
	if (calls < 1000)
		calls = 1000;

	r = usft_init();
	if (r)
		die("usft_init", r);
	site = ftrace_location((unsigned long)bench_target);
	if (!site)
		die("bench_target has no site", EINVAL);
	near_ret = copy_tramp(bench_ret_tramp_start, bench_ret_tramp_end, 0, "near");
	near_jmp = copy_tramp(bench_jmp_tramp_start, bench_jmp_tramp_end, site + 5, "near");
	far_ret = copy_tramp(bench_ret_tramp_start, bench_ret_tramp_end, 0, "far");
	usft_set_option("tramp_placement", "near");

	struct bcase cases[] = {
		{ "untraced", bench_target },
		{ "stub_call", bench_stub_call_target },
		{ "direct_near", bench_target, 1, &near_ret },
		{ "direct_near_jmp", bench_target, 1, &near_jmp, true },
		{ "direct_far", bench_target, 1, &far_ret },
		{ "list_1", bench_target, 1, &far_ret, false, 0 },
		{ "list_4", bench_target, 1, &far_ret, false, 3 },
		{ "list_8", bench_target, 1, &far_ret, false, 7 },
		{ "list_16", bench_target, 1, &far_ret, false, 15 },
		{ "ops_tramp", bench_target, 2 },
		{ "callsite_1", bench_target, 1, &far_ret, false, 0, true },
		{ "callsite_16", bench_target, 1, &far_ret, false, 15, true },
	};
	int nc = (int)(sizeof(cases) / sizeof(cases[0]));

	bench_print_cpu(stdout, "usft-bench-ladder");
	printf("# usft-bench-ladder: %ld calls per sample, %d rounds, cases interleaved\n",
	       calls, rounds);
	printf("# near trampolines in rel32 reach: %s; far trampoline in reach: %s\n",
	       in_rel32(site, near_ret) && in_rel32(site, near_jmp) ? "yes" : "NO",
	       in_rel32(site, far_ret) ? "yes (far == near here)" : "no");
	for (r = 0; r < rounds; r++) {
		for (i = 0; i < nc; i++) {
			struct bcase *c = &cases[i];

			if (setup(c))
				die(c->name, errno);
			time_calls(c->fn, calls / 20 + 1);	/* warm up */
			c->samples[r] = time_calls(c->fn, calls);
			teardown(c);
		}
		fprintf(stderr, "round %d/%d\n", r + 1, rounds);
	}

	double base = median(cases[0].samples, rounds);
	double stub = median(cases[1].samples, rounds) - base;
	double near = median(cases[2].samples, rounds) - base;
	double far = median(cases[4].samples, rounds) - base;

	for (i = 0; i < nc; i++) {
		double m = median(cases[i].samples, rounds), lo, hi;

		bench_minmax(cases[i].samples, rounds, &lo, &hi);
		printf("section=ladder case=%s ns_per_call=%.2f added_ns=%.2f x_untraced=%.2f "
		       "ns_per_call_min=%.2f ns_per_call_max=%.2f\n",
		       cases[i].name, m, m - base, m / base, lo, hi);
	}
	{
		double l1 = median(cases[5].samples, rounds), l16 = median(cases[8].samples, rounds);
		double c1 = median(cases[10].samples, rounds), c16 = median(cases[11].samples, rounds);
		double e_base = bench_spread(cases[0].samples, rounds);
		double e_stub = e_base + bench_spread(cases[1].samples, rounds);
		double e_near = e_base + bench_spread(cases[2].samples, rounds);
		double e_far = e_base + bench_spread(cases[4].samples, rounds);
		int noisy = 0;

		/* each ratio with the range it can physically take: outside it,
		 * or with a denominator the rounds' spread swallows, the machine
		 * was too busy for it and the line says so instead of a number */
		noisy += bench_print_ratio(stdout, "direct_near_added/stub_call_added", "%.2f", "",
				     stub > e_stub ? near / stub : NAN, 0.0, 1e9, stub, e_near);
		noisy += bench_print_ratio(stdout, "near_closes_gap", "%.1f%%", " ((far-near)/(far-stub_call))",
				     far - stub > e_far + e_stub ? 100.0 * (far - near) / (far - stub) : NAN,
				     0.0, 100.0, (far - stub) / 100.0, e_far + e_near);
		noisy += bench_print_ratio(stdout, "list_ns_per_extra_ops", "%.2f", " ((list_16-list_1)/15)",
				     (l16 - l1) / 15, 0.0, 1e9, 15.0,
				     bench_spread(cases[5].samples, rounds) + bench_spread(cases[8].samples, rounds));
		noisy += bench_print_ratio(stdout, "callsite_ns_per_extra_ops", "%.2f",
				     " ((callsite_16-callsite_1)/15)", (c16 - c1) / 15, 0.0, 1e9, 15.0,
				     bench_spread(cases[10].samples, rounds) + bench_spread(cases[11].samples, rounds));
		if (noisy)
			printf("# too noisy for %d of 4 ratios: other work ran during the rounds; run "
			       "again on an idle machine, or with more --rounds\n", noisy);
	}
	return 0;
}
