// SPDX-License-Identifier: MIT
/*
 * ftrace-ops - a userspace port of the kernel's samples/ftrace/ftrace-ops.c
 * benchmark, written from its description.
 *
 * It times a loop of calls to tracee_relevant() while nr_ops_relevant ops
 * filter that function and nr_ops_irrelevant ops filter tracee_irrelevant(),
 * which the loop never calls.  The same loop with no ops registered is the
 * untraced baseline; both are measured in the same process, interleaved
 * (A = untraced, B = traced, repeated), and the medians are reported as one
 * key=value line.  --matrix runs a fixed set of configurations that walks the
 * dispatch ladder: per-ops trampoline, list function with 1/4/8/16 ops,
 * SAVE_REGS and the recursion-assist flag.
 *
 * Only tracee_relevant() and tracee_irrelevant() get patch sites: the whole
 * file is built with the patch flags (usft_instrument) and every other
 * function is notrace.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <usft/common.h>
#include <usft/ftrace.h>
#include <usft/usft.h>

/* Tracees: never inlined, cloned or merged, and their bodies are not empty. */
#if defined(__clang__)
#define TRACEE __attribute__((noinline))
#else
#define TRACEE __attribute__((noinline, noipa))
#endif

void tracee_relevant(void);
void tracee_irrelevant(void);

TRACEE void tracee_relevant(void)
{
	asm volatile("" ::: "memory");
}

TRACEE void tracee_irrelevant(void)
{
	asm volatile("" ::: "memory");
}

/* The same body without a patch site: what a build without the flags costs. */
void tracee_nopad(void);
__attribute__((noinline, patchable_function_entry(0, 0))) void tracee_nopad(void)
{
	asm volatile("" ::: "memory");
}

/* One configuration: the kernel module's parameters plus the dispatch option. */
struct config {
	const char *name;		/* matrix case, NULL for a single run */
	unsigned int nr_function_calls;
	unsigned int nr_ops_relevant;
	unsigned int nr_ops_irrelevant;
	bool save_regs;
	bool assist_recursion;
	bool assist_rcu;
	bool check_count;
	const char *ops_trampolines;	/* value to force, NULL: the base value */
};

struct sample_ops {
	struct ftrace_ops ops;
	unsigned long count;		/* calls seen (check_count only) */
	unsigned long no_regs;		/* SAVE_REGS calls without pt_regs */
};

struct result {
	double untraced_ns;		/* median ns/call, no ops registered */
	double traced_ns;		/* median ns/call, ops registered */
	unsigned long nr_trampolines;	/* usft_stat() while registered */
	unsigned long nr_enabled;
};

#define WARMUP_CALLS 1000u
#define MATRIX_CALLS 1000000u	/* --matrix default: steadier medians */
#define MAX_REPEAT 101u

static unsigned int repeat = 5;
static char base_ops_trampolines[32];	/* option value before the matrix */

static notrace void ops_func_nop(unsigned long ip, unsigned long parent_ip,
				 struct ftrace_ops *op, struct ftrace_regs *fregs)
{
}

static notrace void ops_func_count(unsigned long ip, unsigned long parent_ip,
				   struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct sample_ops *self = (struct sample_ops *)op;	/* ops is first */

	self->count++;
	if ((op->flags & FTRACE_OPS_FL_SAVE_REGS) && !ftrace_get_regs(fregs))
		self->no_regs++;
}

static notrace double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static notrace void call_loop(unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		tracee_relevant();
}

/* ns per call of n calls to tracee_relevant(). */
static notrace double time_loop(unsigned int n)
{
	double t0, t1;

	if (!n)
		return 0.0;
	t0 = now_ns();
	call_loop(n);
	t1 = now_ns();
	return (t1 - t0) / n;
}

static notrace int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static notrace double median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static notrace const char *get_ops_trampolines(char *buf, size_t len)
{
	if (usft_get_option("ops_trampolines", buf, len) < 0)
		snprintf(buf, len, "?");
	return buf;
}

/* Set ops_trampolines for @c (its own value or the base one). */
static notrace int apply_ops_trampolines(const struct config *c)
{
	const char *val = c->ops_trampolines;
	int ret;

	if (!val) {
		if (!strcmp(base_ops_trampolines, "?"))
			return 0;	/* unknown option: nothing to restore */
		val = base_ops_trampolines;
	}
	ret = usft_set_option("ops_trampolines", val);
	if (ret < 0)
		fprintf(stderr, "ftrace-ops: usft_set_option(ops_trampolines=%s): %s\n",
			val, strerror(-ret));
	return ret;
}

static notrace int ops_init(struct sample_ops *so, const struct config *c,
			    void (*tracee)(void))
{
	int ret;

	so->ops.func = c->check_count ? ops_func_count : ops_func_nop;
	if (c->save_regs)
		so->ops.flags |= FTRACE_OPS_FL_SAVE_REGS;
	if (c->assist_recursion)
		so->ops.flags |= FTRACE_OPS_FL_RECURSION;
	if (c->assist_rcu)
		so->ops.flags |= FTRACE_OPS_FL_RCU;
	ret = ftrace_set_filter_ip(&so->ops, (unsigned long)tracee, 0, 0);
	if (ret)
		fprintf(stderr, "ftrace-ops: ftrace_set_filter_ip(%s): %s\n",
			tracee == tracee_relevant ? "tracee_relevant" : "tracee_irrelevant",
			strerror(-ret));
	return ret;
}

/* Unregister the first @nr_registered of @ops, free every filter. */
static notrace void ops_release(struct sample_ops *ops, unsigned int nr,
				unsigned int nr_registered)
{
	for (unsigned int i = 0; i < nr_registered; i++) {
		int ret = unregister_ftrace_function(&ops[i].ops);

		if (ret)
			fprintf(stderr, "ftrace-ops: unregister_ftrace_function(#%u): %s\n",
				i, strerror(-ret));
	}
	for (unsigned int i = 0; i < nr; i++)
		ftrace_free_filter(&ops[i].ops);
}

/* Check the counts of one traced loop. Return: 0 or 1 (mismatch, printed). */
static notrace int check_counts(const struct config *c, const struct sample_ops *ops)
{
	unsigned int nr = c->nr_ops_relevant + c->nr_ops_irrelevant;
	int ret = 0;

	for (unsigned int i = 0; i < nr; i++) {
		bool relevant = i < c->nr_ops_relevant;
		unsigned long want = relevant ? c->nr_function_calls : 0;

		if (ops[i].count != want) {
			fprintf(stderr, "ftrace-ops: error: %s ops #%u saw %lu calls, expected %lu\n",
				relevant ? "relevant" : "irrelevant",
				relevant ? i : i - c->nr_ops_relevant, ops[i].count, want);
			ret = 1;
		}
		if (ops[i].no_regs) {
			fprintf(stderr, "ftrace-ops: error: SAVE_REGS ops #%u got no pt_regs in %lu calls\n",
				i, ops[i].no_regs);
			ret = 1;
		}
	}
	return ret;
}

/*
 * One A/B pair: time the loop untraced, register the ops, time it traced,
 * unregister.  Return: 0, 1 on a count mismatch, or a negative errno.
 */
static notrace int measure_once(const struct config *c, double *a, double *b,
				struct result *r)
{
	unsigned int nr = c->nr_ops_relevant + c->nr_ops_irrelevant;
	unsigned int registered = 0;
	struct usft_stats st = { .sz = sizeof(st) };
	struct sample_ops *ops;
	int ret = 0;

	call_loop(WARMUP_CALLS);
	*a = time_loop(c->nr_function_calls);

	ops = calloc(nr ? nr : 1, sizeof(*ops));
	if (!ops)
		return -ENOMEM;
	for (unsigned int i = 0; i < nr && !ret; i++)
		ret = ops_init(&ops[i], c, i < c->nr_ops_relevant ?
			       tracee_relevant : tracee_irrelevant);
	for (; registered < nr && !ret; registered++) {
		ret = register_ftrace_function(&ops[registered].ops);
		if (ret) {
			fprintf(stderr, "ftrace-ops: register_ftrace_function(#%u): %s\n",
				registered, strerror(-ret));
			break;
		}
	}
	if (ret)
		goto out;

	if (!usft_stat(&st)) {
		r->nr_trampolines = st.nr_trampolines;
		r->nr_enabled = st.nr_enabled;
	}
	call_loop(WARMUP_CALLS);
	for (unsigned int i = 0; i < nr; i++)
		ops[i].count = ops[i].no_regs = 0;
	*b = time_loop(c->nr_function_calls);
	if (c->check_count)
		ret = check_counts(c, ops);
out:
	ops_release(ops, nr, registered);
	free(ops);
	return ret;
}

static notrace int measure(const struct config *c, struct result *r)
{
	double a[MAX_REPEAT], b[MAX_REPEAT];
	int ret;

	memset(r, 0, sizeof(*r));
	for (unsigned int i = 0; i < repeat; i++) {
		ret = measure_once(c, &a[i], &b[i], r);
		if (ret)
			return ret;
	}
	r->untraced_ns = median(a, repeat);
	r->traced_ns = median(b, repeat);
	return 0;
}

static notrace void print_result(const struct config *c, const struct result *r)
{
	char tramp[32];

	printf("ftrace-ops:");
	if (c->name)
		printf(" case=%s", c->name);
	printf(" nr_function_calls=%u nr_ops_relevant=%u nr_ops_irrelevant=%u"
	       " save_regs=%d assist_recursion=%d assist_rcu=%d ops_trampolines=%s"
	       " nr_trampolines=%lu nr_enabled=%lu repeat=%u check_count=%s"
	       " untraced_ns_per_call=%.2f ns_per_call=%.2f added_ns=%.2f\n",
	       c->nr_function_calls, c->nr_ops_relevant, c->nr_ops_irrelevant,
	       c->save_regs, c->assist_recursion, c->assist_rcu,
	       get_ops_trampolines(tramp, sizeof(tramp)),
	       r->nr_trampolines, r->nr_enabled, repeat,
	       c->check_count ? "ok" : "off",
	       r->untraced_ns, r->traced_ns, r->traced_ns - r->untraced_ns);
	fflush(stdout);
}

/* Apply the dispatch option, measure, print. Return: 0 or 1. */
static notrace int run_config(const struct config *c)
{
	struct result r;
	int ret;

	if (c->ops_trampolines && apply_ops_trampolines(c))
		return 1;
	ret = measure(c, &r);
	if (!ret)
		print_result(c, &r);
	else if (ret < 0)
		fprintf(stderr, "ftrace-ops: %s%s%sfailed: %s\n",
			c->name ? "case " : "", c->name ? c->name : "",
			c->name ? " " : "", strerror(-ret));
	if (c->ops_trampolines) {
		struct config base = *c;

		base.ops_trampolines = NULL;
		apply_ops_trampolines(&base);
	}
	return ret ? 1 : 0;
}

static notrace double time_nopad(unsigned int n)
{
	double t0, t1;

	t0 = now_ns();
	for (unsigned int i = 0; i < n; i++)
		tracee_nopad();
	t1 = now_ns();
	return (t1 - t0) / n;
}

/*
 * Untraced site (canonical nop5) against the same function built without
 * the patch flags, interleaved A/B, medians: the cost of being patchable.
 */
static notrace void run_nopad(unsigned int n, unsigned int repeat)
{
	double a[64], b[64];

	if (repeat > 64)
		repeat = 64;
	for (unsigned int i = 0; i < repeat; i++) {
		a[i] = time_nopad(n);
		b[i] = time_loop(n);
	}
	qsort(a, repeat, sizeof(a[0]), cmp_double);
	qsort(b, repeat, sizeof(b[0]), cmp_double);
	printf("ftrace-ops: case=untraced_vs_nopad nr_function_calls=%u repeat=%u "
	       "nopad_ns_per_call=%.2f ns_per_call=%.2f ratio=%.3f\n", n, repeat,
	       a[repeat / 2], b[repeat / 2], b[repeat / 2] / a[repeat / 2]);
}

static notrace int run_matrix(const struct config *defaults)
{
	struct config m[] = {
		{ .name = "untraced" },
		{ .name = "tramp_1ops", .nr_ops_relevant = 1, .ops_trampolines = "1" },
		{ .name = "list_1ops", .nr_ops_relevant = 1, .ops_trampolines = "0" },
		{ .name = "list_4ops", .nr_ops_relevant = 1, .nr_ops_irrelevant = 3,
		  .ops_trampolines = "0" },
		{ .name = "list_8ops", .nr_ops_relevant = 1, .nr_ops_irrelevant = 7,
		  .ops_trampolines = "0" },
		{ .name = "list_16ops", .nr_ops_relevant = 1, .nr_ops_irrelevant = 15,
		  .ops_trampolines = "0" },
		{ .name = "tramp_16ops", .nr_ops_relevant = 1, .nr_ops_irrelevant = 15,
		  .ops_trampolines = "1" },
		{ .name = "save_regs", .nr_ops_relevant = 1, .save_regs = true },
		{ .name = "assist_recursion", .nr_ops_relevant = 1,
		  .assist_recursion = true },
	};
	int ret = 0;

	run_nopad(defaults->nr_function_calls, 15);
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		m[i].nr_function_calls = defaults->nr_function_calls;
		m[i].check_count = defaults->check_count;
		ret |= run_config(&m[i]);
	}
	return ret;
}

static notrace void usage(FILE *out)
{
	fprintf(out,
		"usage: ftrace-ops [options]\n"
		"  --nr-function-calls N   calls to tracee_relevant() per timed loop\n"
		"                          (100000; 1000000 with --matrix)\n"
		"  --nr-ops-relevant N     ops filtering tracee_relevant (1)\n"
		"  --nr-ops-irrelevant N   ops filtering tracee_irrelevant (0)\n"
		"  --save-regs             FTRACE_OPS_FL_SAVE_REGS\n"
		"  --assist-recursion      FTRACE_OPS_FL_RECURSION\n"
		"  --assist-rcu            FTRACE_OPS_FL_RCU\n"
		"  --check-count           count calls; relevant ops must see N, irrelevant 0\n"
		"  --persist               accepted, no effect in userspace\n"
		"  --option NAME=VALUE     usft_set_option() before anything runs (repeatable)\n"
		"  --repeat R              A/B pairs per configuration, median reported (5)\n"
		"  --matrix                run the fixed set of configurations\n");
}

static notrace int parse_uint(const char *opt, const char *s, unsigned int *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || end == s || *end || v > 0xffffffffUL || *s == '-') {
		fprintf(stderr, "ftrace-ops: %s: bad number '%s'\n", opt, s);
		return -1;
	}
	*out = (unsigned int)v;
	return 0;
}

static notrace int set_option(const char *arg)
{
	char name[64];
	const char *eq = strchr(arg, '=');
	int ret;

	if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof(name)) {
		fprintf(stderr, "ftrace-ops: --option wants NAME=VALUE, got '%s'\n", arg);
		return -1;
	}
	memcpy(name, arg, eq - arg);
	name[eq - arg] = '\0';
	ret = usft_set_option(name, eq + 1);
	if (ret < 0) {
		fprintf(stderr, "ftrace-ops: usft_set_option(%s, %s): %s\n",
			name, eq + 1, strerror(-ret));
		return -1;
	}
	return 0;
}

enum {
	OPT_CALLS = 256, OPT_RELEVANT, OPT_IRRELEVANT, OPT_SAVE_REGS,
	OPT_RECURSION, OPT_RCU, OPT_CHECK, OPT_PERSIST, OPT_OPTION,
	OPT_REPEAT, OPT_MATRIX,
};

notrace int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "nr-function-calls", required_argument, NULL, OPT_CALLS },
		{ "nr-ops-relevant", required_argument, NULL, OPT_RELEVANT },
		{ "nr-ops-irrelevant", required_argument, NULL, OPT_IRRELEVANT },
		{ "save-regs", no_argument, NULL, OPT_SAVE_REGS },
		{ "assist-recursion", no_argument, NULL, OPT_RECURSION },
		{ "assist-rcu", no_argument, NULL, OPT_RCU },
		{ "check-count", no_argument, NULL, OPT_CHECK },
		{ "persist", no_argument, NULL, OPT_PERSIST },
		{ "option", required_argument, NULL, OPT_OPTION },
		{ "repeat", required_argument, NULL, OPT_REPEAT },
		{ "matrix", no_argument, NULL, OPT_MATRIX },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct config c = {
		.nr_function_calls = 100000,
		.nr_ops_relevant = 1,
	};
	bool matrix = false, calls_given = false;
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_CALLS:
			if (parse_uint("--nr-function-calls", optarg, &c.nr_function_calls))
				return 2;
			calls_given = true;
			break;
		case OPT_RELEVANT:
			if (parse_uint("--nr-ops-relevant", optarg, &c.nr_ops_relevant))
				return 2;
			break;
		case OPT_IRRELEVANT:
			if (parse_uint("--nr-ops-irrelevant", optarg, &c.nr_ops_irrelevant))
				return 2;
			break;
		case OPT_SAVE_REGS:
			c.save_regs = true;
			break;
		case OPT_RECURSION:
			c.assist_recursion = true;
			break;
		case OPT_RCU:
			c.assist_rcu = true;
			break;
		case OPT_CHECK:
			c.check_count = true;
			break;
		case OPT_PERSIST:
			break;
		case OPT_OPTION:
			if (set_option(optarg))
				return 2;
			break;
		case OPT_REPEAT:
			if (parse_uint("--repeat", optarg, &repeat))
				return 2;
			if (!repeat || repeat > MAX_REPEAT) {
				fprintf(stderr, "ftrace-ops: --repeat must be 1..%u\n", MAX_REPEAT);
				return 2;
			}
			break;
		case OPT_MATRIX:
			matrix = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "ftrace-ops: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}

	ret = usft_init();
	if (ret) {
		fprintf(stderr, "ftrace-ops: usft_init: %s\n", strerror(-ret));
		return 1;
	}
	if (!ftrace_location((unsigned long)tracee_relevant) ||
	    !ftrace_location((unsigned long)tracee_irrelevant)) {
		fprintf(stderr, "ftrace-ops: the tracees have no patch site (built without the patch flags?)\n");
		return 1;
	}
	get_ops_trampolines(base_ops_trampolines, sizeof(base_ops_trampolines));

	if (matrix && !calls_given)
		c.nr_function_calls = MATRIX_CALLS;
	return matrix ? run_matrix(&c) : run_config(&c);
}
