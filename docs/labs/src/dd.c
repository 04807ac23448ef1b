/* dd.c - lab 8: an empty fentry program on vfs_write(), reached four ways:
 * a direct call (the BPF trampoline), an fprobe that copies the arguments
 * in a loop, an fprobe with the loop unrolled, and a plain ftrace_ops
 * callback on the shared list path, with and without per-callsite ops.
 *
 *   ./dd [records] [rounds]     (default 1000000 records, 5 rounds)
 *
 * Each record is what `dd if=/dev/zero of=/dev/null` does per block:
 * vfs_read() fills a 512-byte buffer with zeros, vfs_write() takes it.
 * Every round runs every variant once (A/B interleaved); the figures are
 * the medians over the rounds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <usft/fprobe.h>
#include <usft/ftrace.h>
#include <usft/trampoline.h>
#include <usft/usft.h>

#define BS 512
#define MAX_ARGS 6

struct file { long f_pos; int zero; };

/* the traced pair: noipa keeps each call a call */
__attribute__((noipa)) long vfs_read(struct file *f, char *buf, unsigned long count, long *pos)
{
	memset(buf, 0, count);
	*pos += count;
	return count;
}

__attribute__((noipa)) long vfs_write(struct file *f, const char *buf, unsigned long count,
				      long *pos)
{
	*pos += count;
	return count;
}

/* ---- the program: empty, as bpftrace -e 'kfunc:vfs_write {}' ------------ */

static notrace unsigned long empty_prog(const unsigned long *ctx, void *cookie)
{
	return 0;
}

/* ---- the fprobe-based dispatch of the seed: a context, an argument loop -- */

struct call_ctx {
	unsigned long ctx[8];
	unsigned long ip;
	unsigned long args[MAX_ARGS + 1];
};

struct links { int nr; usft_tramp_prog_t prog[4]; };
static struct links fentry = { 1, { empty_prog } }, fmod_ret, fexit;
static int nr_args = 4;		/* vfs_write() has four */

static notrace int entry_loop(struct fprobe *fp, unsigned long ip, unsigned long ret_ip,
			      struct ftrace_regs *fregs, void *data)
{
	struct call_ctx *c = data;
	int i;

	memset(&c->ctx, 0, sizeof(c->ctx));
	c->ip = ip;
	for (i = 0; i < nr_args; i++)
		c->args[i] = ftrace_regs_get_argument(fregs, i);
	for (i = 0; i < fentry.nr; i++)
		fentry.prog[i](c->args, NULL);
	c->args[nr_args] = 0;
	for (i = 0; i < fmod_ret.nr; i++)
		if (fmod_ret.prog[i](c->args, NULL))
			return 1;
	return fexit.nr ? 0 : 1;	/* non-zero: no exit handler for this call */
}

/* Steven Rostedt's suggestion: one callback per argument count, loop unrolled */
#define ENTRY_N(n, ...)								\
static notrace int entry_##n(struct fprobe *fp, unsigned long ip, unsigned long ret_ip,	\
			     struct ftrace_regs *fregs, void *data)			\
{										\
	struct call_ctx *c = data;						\
	int i;									\
										\
	c->ip = ip;								\
	__VA_ARGS__								\
	for (i = 0; i < fentry.nr; i++)						\
		fentry.prog[i](c->args, NULL);					\
	return fexit.nr ? 0 : 1;						\
}
#define ARG(i) c->args[i] = ftrace_regs_get_argument(fregs, i);
ENTRY_N(0, )
ENTRY_N(1, ARG(0))
ENTRY_N(2, ARG(0) ARG(1))
ENTRY_N(3, ARG(0) ARG(1) ARG(2))
ENTRY_N(4, ARG(0) ARG(1) ARG(2) ARG(3))
ENTRY_N(5, ARG(0) ARG(1) ARG(2) ARG(3) ARG(4))
ENTRY_N(6, ARG(0) ARG(1) ARG(2) ARG(3) ARG(4) ARG(5))
static const fprobe_entry_cb entry_unrolled[MAX_ARGS + 1] = {
	entry_0, entry_1, entry_2, entry_3, entry_4, entry_5, entry_6,
};

/* ---- the same work from a plain ftrace_ops callback ---------------------- */

static notrace void ops_func(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op,
			     struct ftrace_regs *fregs)
{
	unsigned long args[MAX_ARGS + 1];

	args[0] = ftrace_regs_get_argument(fregs, 0);
	args[1] = ftrace_regs_get_argument(fregs, 1);
	args[2] = ftrace_regs_get_argument(fregs, 2);
	args[3] = ftrace_regs_get_argument(fregs, 3);
	for (int i = 0; i < fentry.nr; i++)
		fentry.prog[i](args, NULL);
}

static notrace void other_func(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op,
			       struct ftrace_regs *fregs)
{
}

/* ---- the variants -------------------------------------------------------- */

enum variant {
	NONE, DIRECT, FPROBE_LOOP, FPROBE_UNROLLED, OPS_TRAMP, OPS_LIST, OPS_CALLSITE, NR_VARIANTS
};
static const char *const names[] = {
	"none", "direct", "fprobe_loop", "fprobe_unrolled", "ops_tramp", "ops_list", "ops_callsite",
};

static struct usft_tramp_link *link;
static struct fprobe fp;
static struct ftrace_ops ops = { .func = ops_func, .flags = FTRACE_OPS_FL_RECURSION };
static struct ftrace_ops other = { .func = other_func, .flags = FTRACE_OPS_FL_RECURSION };

static notrace void check(int err, const char *what)
{
	if (err) {
		fprintf(stderr, "dd: %s failed: %d\n", what, err);
		exit(1);
	}
}

static notrace void attach(enum variant v)
{
	switch (v) {
	case NONE:
		break;
	case DIRECT: {
		struct usft_tramp_opts o = { .sz = sizeof(o), .nr_args = 4 };

		link = usft_tramp_attach((void *)vfs_write, USFT_TRAMP_FENTRY, empty_prog, NULL, &o);
		check(link ? 0 : -1, "usft_tramp_attach");
		break;
	}
	case FPROBE_LOOP:
	case FPROBE_UNROLLED:
		memset(&fp, 0, sizeof(fp));
		fp.entry_data_size = sizeof(struct call_ctx);
		fp.entry_handler = v == FPROBE_LOOP ? entry_loop : entry_unrolled[nr_args];
		check(register_fprobe(&fp, "vfs_write", NULL), "register_fprobe");
		break;
	case OPS_TRAMP:
	case OPS_LIST:
	case OPS_CALLSITE:
		/* ops_tramp: the ops' own trampoline; otherwise the shared caller
		 * and the list walk (both ops tested) or the site's own array */
		check(usft_set_option("ops_trampolines", v == OPS_TRAMP ? "1" : "0"),
		      "ops_trampolines");
		check(usft_set_option("per_callsite_ops", v == OPS_CALLSITE ? "1" : "0"),
		      "per_callsite_ops");
		check(ftrace_set_filter(&ops, (unsigned char *)"vfs_write", 9, 1), "filter");
		check(ftrace_set_filter(&other, (unsigned char *)"vfs_read", 8, 1), "filter");
		check(register_ftrace_function(&other), "register other");
		check(register_ftrace_function(&ops), "register ops");
		break;
	default:
		break;
	}
}

static notrace void detach(enum variant v)
{
	switch (v) {
	case DIRECT:
		check(usft_tramp_detach(link), "usft_tramp_detach");
		break;
	case FPROBE_LOOP:
	case FPROBE_UNROLLED:
		check(unregister_fprobe(&fp), "unregister_fprobe");
		break;
	case OPS_TRAMP:
	case OPS_LIST:
	case OPS_CALLSITE:
		check(unregister_ftrace_function(&ops), "unregister ops");
		check(unregister_ftrace_function(&other), "unregister other");
		break;
	default:
		break;
	}
}

static notrace double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* dd if=/dev/zero of=/dev/null bs=512 count=@n: seconds */
static notrace double dd(long n)
{
	static char buf[BS];
	struct file zero = { 0, 1 }, null = { 0, 0 };
	double t = now();

	for (long i = 0; i < n; i++) {
		vfs_read(&zero, buf, BS, &zero.f_pos);
		vfs_write(&null, buf, BS, &null.f_pos);
	}
	t = now() - t;
	if (null.f_pos != n * BS) {
		fprintf(stderr, "dd: wrote %ld bytes of %ld\n", null.f_pos, n * BS);
		exit(1);
	}
	return t;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	int rounds = argc > 2 ? atoi(argv[2]) : 5;
	double t[NR_VARIANTS][64], med[NR_VARIANTS];

	if (n <= 0 || rounds <= 0 || rounds > 64) {
		fprintf(stderr, "usage: dd [records > 0] [rounds 1..64]\n");
		return 2;
	}
	dd(n / 10 + 1);		/* warm up */
	for (int r = 0; r < rounds; r++)
		for (int v = 0; v < NR_VARIANTS; v++) {
			attach(v);
			t[v][r] = dd(n);
			detach(v);
		}
	printf("%-16s %10s %12s %10s\n", "variant", "MB/s", "ns/record", "added ns");
	for (int v = 0; v < NR_VARIANTS; v++) {
		qsort(t[v], rounds, sizeof(double), cmp);
		med[v] = t[v][rounds / 2];
		printf("%-16s %10.0f %12.2f %10.2f\n", names[v], n * (double)BS / med[v] / 1e6,
		       med[v] / n * 1e9, (med[v] - med[NONE]) / n * 1e9);
	}
	printf("added ns over direct's:");
	for (int v = FPROBE_LOOP; v < NR_VARIANTS; v++)
		printf(" %s %.2fx", names[v], (med[v] - med[NONE]) / (med[DIRECT] - med[NONE]));
	printf("\n");
	return 0;
}
