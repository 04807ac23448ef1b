// SPDX-License-Identifier: MIT
/*
 * usft-demo - a guided tour of function tracing inside a running process
 * (what `make demo` runs).
 *
 * The four demo_* functions are the program being traced: the compiler left
 * a few bytes of NOPs at each of their entries (-fpatchable-function-entry).
 * The tour shows those bytes, registers an ftrace_ops for "demo_*" (the
 * runtime rewrites the NOPs into a call), counts calls per function while the
 * workload runs, unregisters (the NOPs come back) and checks everything.
 * Every other function here is notrace: it gets no site.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <usft/common.h>
#include <usft/ftrace.h>
#include <usft/usft.h>

/* ------------------------------------------------------------------ */
/* The traced workload                                                 */

/* noipa: never inlined, cloned or merged, so each keeps one site. */
#if defined(__clang__)
#define DEMO_FN __attribute__((noinline))
#else
#define DEMO_FN __attribute__((noinline, noipa))
#endif

/* Parse up to @max whitespace-separated integers. Return: how many. */
DEMO_FN int demo_parse(const char *s, long *out, int max)
{
	int n = 0;
	char *end;

	while (n < max) {
		long v = strtol(s, &end, 10);

		if (end == s)
			break;
		out[n++] = v;
		s = end;
	}
	return n;
}

/* Sum of squares. */
DEMO_FN long demo_compute(const long *v, int n)
{
	long sum = 0;

	for (int i = 0; i < n; i++)
		sum += v[i] * v[i];
	return sum;
}

/*
 * Naive recursive Fibonacci: fib(n) makes 2 * fib(n + 1) - 1 calls.  The
 * empty asm statements keep the compiler from turning one of the two
 * recursive calls into a loop, which would change the call count.
 */
DEMO_FN unsigned long demo_fib(unsigned int n)
{
	unsigned long a, b;

	if (n < 2)
		return n;
	a = demo_fib(n - 1);
	asm volatile("" : "+r"(a));
	b = demo_fib(n - 2);
	asm volatile("" : "+r"(b));
	return a + b;
}

DEMO_FN void demo_report(const char *what, long value)
{
	printf("      %-28s = %ld\n", what, value);
}

/* ------------------------------------------------------------------ */
/* The tour (notrace from here on)                                     */

#define FIB_N 15

static const struct {
	const char *input;
	long sum_of_squares;
} inputs[] = {
	{ "1 2 3", 14 },
	{ "4 5 6 7", 126 },
	{ "10 20", 500 },
};
#define NR_INPUTS (int)(sizeof(inputs) / sizeof(inputs[0]))

/* Calls seen per site; the callback runs on this one thread only. */
#define MAX_FUNCS 16
static struct {
	unsigned long ip;
	unsigned long calls;
} hits[MAX_FUNCS];
static unsigned int nr_hits;
static unsigned long lost_hits;

static notrace void count_call(unsigned long ip, unsigned long parent_ip,
			       struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	for (unsigned int i = 0; i < nr_hits; i++) {
		if (hits[i].ip == ip) {
			hits[i].calls++;
			return;
		}
	}
	if (nr_hits < MAX_FUNCS) {
		hits[nr_hits].ip = ip;
		hits[nr_hits++].calls = 1;
	} else {
		lost_hits++;
	}
}

static struct ftrace_ops demo_ops = { .func = count_call };

static notrace unsigned long total_hits(void)
{
	unsigned long sum = lost_hits;

	for (unsigned int i = 0; i < nr_hits; i++)
		sum += hits[i].calls;
	return sum;
}

/* Run the workload once. Return: true when every result is right. */
static notrace bool run_workload(bool verbose)
{
	bool ok = true;
	unsigned long fib;

	for (int i = 0; i < NR_INPUTS; i++) {
		long v[8], sum;
		char label[64];
		int n = demo_parse(inputs[i].input, v, 8);

		sum = demo_compute(v, n);
		if (verbose) {
			snprintf(label, sizeof(label), "sum of squares of \"%s\"", inputs[i].input);
			demo_report(label, sum);
		}
		ok &= sum == inputs[i].sum_of_squares;
	}
	fib = demo_fib(FIB_N);
	if (verbose) {
		char label[16];

		snprintf(label, sizeof(label), "fib(%d)", FIB_N);
		demo_report(label, (long)fib);
	}
	ok &= fib == 610;
	return ok;
}

/* Print the entry bytes of @fn and decode them. Return: bytes read or < 0. */
static notrace int show_site(const char *name, unsigned long fn,
			     unsigned char *buf, size_t len)
{
	unsigned long site = ftrace_location(fn);
	int n = usft_site_bytes(fn, buf, len);
	char decoded[128] = "?";

	if (n < 0) {
		printf("    %s: usft_site_bytes failed: %s\n", name, strerror(-n));
		return n;
	}
	printf("    %s entry (site %#lx): ", name, site);
	for (int i = 0; i < n; i++)
		printf("%02x ", buf[i]);

#if defined(__x86_64__)
	static const unsigned char nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	static const unsigned char nops[5] = { 0x90, 0x90, 0x90, 0x90, 0x90 };

	if (n >= 5 && !memcmp(buf, nop5, 5)) {
		snprintf(decoded, sizeof(decoded), "nop5 (does nothing)");
	} else if (n >= 5 && !memcmp(buf, nops, 5)) {
		snprintf(decoded, sizeof(decoded), "5 x nop (as the compiler left it)");
	} else if (n >= 5 && (buf[0] == 0xe8 || buf[0] == 0xe9)) {
		int rel;
		unsigned long target;
		const char *sym;

		memcpy(&rel, buf + 1, 4);
		target = site + 5 + (long)rel;
		sym = usft_kallsyms_lookup(target, NULL);
		snprintf(decoded, sizeof(decoded), "%s %#lx (%s)",
			 buf[0] == 0xe8 ? "call" : "jmp", target,
			 sym ? sym : "a usft trampoline");
	} else if (n >= 1 && buf[0] == 0xcc) {
		snprintf(decoded, sizeof(decoded), "int3 (patch in progress)");
	}
#elif defined(__aarch64__)
	if (n >= 4) {
		unsigned int insn;

		memcpy(&insn, buf + n - 4, 4);
		if (insn == 0xd503201f) {
			snprintf(decoded, sizeof(decoded), "nop (does nothing)");
		} else if ((insn & 0xfc000000) == 0x94000000) {
			long off = (long)((int)(insn << 6) >> 6) * 4;
			unsigned long target = site + off;
			const char *sym = usft_kallsyms_lookup(target, NULL);

			snprintf(decoded, sizeof(decoded), "bl %#lx (%s)", target,
				 sym ? sym : "a usft trampoline");
		}
	}
#endif
	printf("  ->  %s\n", decoded);
	return n;
}

static notrace int cmp_name(const void *a, const void *b)
{
	const char *x = usft_kallsyms_lookup(*(const unsigned long *)a, NULL);
	const char *y = usft_kallsyms_lookup(*(const unsigned long *)b, NULL);

	return strcmp(x ? x : "", y ? y : "");
}

/* Print calls per function. Return: true when they match the workload. */
static notrace bool show_counts(void)
{
	static const struct {
		const char *name;
		unsigned long calls;
	} expect[] = {
		{ "demo_compute", NR_INPUTS },
		{ "demo_fib", 1973 },	/* 2 * fib(16) - 1 */
		{ "demo_parse", NR_INPUTS },
		{ "demo_report", NR_INPUTS + 1 },
	};
	unsigned long ips[MAX_FUNCS];
	bool ok = !lost_hits;

	for (unsigned int i = 0; i < nr_hits; i++)
		ips[i] = hits[i].ip;
	qsort(ips, nr_hits, sizeof(ips[0]), cmp_name);

	printf("    %-16s %8s %8s\n", "function", "calls", "expected");
	for (unsigned int i = 0; i < nr_hits; i++) {
		const char *name = usft_kallsyms_lookup(ips[i], NULL);
		unsigned long calls = 0;
		long want = -1;

		for (unsigned int j = 0; j < nr_hits; j++)
			if (hits[j].ip == ips[i])
				calls = hits[j].calls;
		for (size_t j = 0; name && j < sizeof(expect) / sizeof(expect[0]); j++)
			if (!strcmp(name, expect[j].name))
				want = (long)expect[j].calls;
		printf("    %-16s %8lu %8ld%s\n", name ? name : "?", calls, want,
		       (long)calls == want ? "" : "   <-- unexpected");
		ok &= (long)calls == want;
	}
	if (nr_hits != sizeof(expect) / sizeof(expect[0])) {
		printf("    (expected %zu functions, saw %u)\n",
		       sizeof(expect) / sizeof(expect[0]), nr_hits);
		ok = false;
	}
	return ok;
}

#define CHECK(cond, what)						\
	do {								\
		if (!(cond)) {						\
			printf("    FAILED: %s\n", what);		\
			failures++;					\
		}							\
	} while (0)

notrace int main(void)
{
	struct usft_stats st = { .sz = sizeof(st) };
	unsigned char before[16], during[16], after[16];
	int nb, nd, na, ret, failures = 0;
	bool ok;

	printf("usft %s demo: tracing functions of a running program\n\n", usft_version());

	printf("[1] The compiler left a patchable site (a few NOP bytes) at the entry of\n"
	       "    every function built with -fpatchable-function-entry. The runtime\n"
	       "    found them at start-up:\n");
	ret = usft_stat(&st);
	if (ret) {
		printf("    usft_stat failed: %s\n", strerror(-ret));
		return 1;
	}
	if (st.disabled) {
		printf("    the runtime disabled itself (see its messages above); stopping.\n");
		return 1;
	}
	printf("    patchable functions: %lu (in %lu object%s), patched now: %lu\n\n",
	       st.nr_sites, st.nr_objects, st.nr_objects == 1 ? "" : "s", st.nr_enabled);
	CHECK(st.nr_sites >= 4, "at least the four demo_* functions are patchable");

	printf("[2] Before tracing, the entry of demo_compute is a no-op:\n");
	nb = show_site("demo_compute", (unsigned long)demo_compute, before, sizeof(before));
	printf("\n");

	printf("[3] Register an ftrace_ops: filter \"demo_*\", callback counts calls.\n"
	       "    The runtime rewrites the NOPs of every matching function into a call:\n");
	ret = ftrace_set_filter(&demo_ops, (unsigned char *)"demo_*", -1, 1);
	if (!ret)
		ret = register_ftrace_function(&demo_ops);
	if (ret) {
		printf("    ftrace_set_filter/register_ftrace_function failed: %s\n", strerror(-ret));
		return 1;
	}
	usft_stat(&st);
	printf("    registered; sites patched now: %lu\n", st.nr_enabled);
	nd = show_site("demo_compute", (unsigned long)demo_compute, during, sizeof(during));
	printf("\n");

	printf("[4] Run the workload (parse three inputs, compute, report, fib(%d)):\n", FIB_N);
	ok = run_workload(true);
	CHECK(ok, "workload results are right while traced");
	printf("\n");

	printf("[5] What the callback saw, per function (names from usft_kallsyms_lookup):\n");
	CHECK(show_counts(), "call counts match the workload");
	printf("\n");

	printf("[6] Unregister the ops: the runtime puts the NOPs back.\n");
	ret = unregister_ftrace_function(&demo_ops);
	CHECK(!ret, "unregister_ftrace_function");
	ftrace_free_filter(&demo_ops);
	usft_stat(&st);
	printf("    sites patched now: %lu\n", st.nr_enabled);
	na = show_site("demo_compute", (unsigned long)demo_compute, after, sizeof(after));
	{
		unsigned long seen = total_hits();

		ok = run_workload(false);
		printf("    ran the workload again: the callback saw %lu more calls\n\n",
		       total_hits() - seen);
		CHECK(ok, "workload results are right after tracing");
		CHECK(total_hits() == seen, "no calls counted after unregister");
	}

	CHECK(nb > 0 && nd == nb && na == nb, "site bytes readable");
	CHECK(nb > 0 && nd == nb && memcmp(before, during, nb) != 0,
	      "site bytes changed while traced");
	CHECK(nb > 0 && na == nb && memcmp(before, after, nb) == 0,
	      "site bytes restored after unregister");
	CHECK(st.nr_enabled == 0, "no site left patched");

	if (failures) {
		printf("[7] %d check%s FAILED\n", failures, failures == 1 ? "" : "s");
		return 1;
	}
	printf("[7] All checks passed: results right, counts exact, sites restored.\n");
	return 0;
}
