/* hist.c - lab 6: a latency histogram tracer on <usft/fgraph.h>. */
#include <stdio.h>
#include <usft/fgraph.h>
#include <usft/usft.h>

#define NR_BUCKETS 40			/* bucket b: [2^b, 2^(b+1)) ns */
static unsigned long hist[NR_BUCKETS];
static unsigned long unwound;

/* entry: nonzero = "call my return callback for this frame" */
static notrace int on_entry(struct ftrace_graph_ent *trace, struct fgraph_ops *gops,
			    struct ftrace_regs *fregs)
{
	return 1;
}

/* return: runs in the traced thread, maybe in a signal handler: no locks,
 * no malloc, no stdio -- one atomic add into a static array */
static notrace void on_return(struct ftrace_graph_ret *trace, struct fgraph_ops *gops,
			      struct ftrace_regs *fregs)
{
	unsigned long long ns = trace->rettime - trace->calltime;
	int b = 0;

	if (trace->flags & FGRAPH_RET_UNWOUND) {
		__atomic_fetch_add(&unwound, 1, __ATOMIC_RELAXED);
		return;
	}
	while (b < NR_BUCKETS - 1 && ns >= 2ULL << b)
		b++;
	__atomic_fetch_add(&hist[b], 1, __ATOMIC_RELAXED);
}

static struct fgraph_ops gops = { .entryfunc = on_entry, .retfunc = on_return };

/* the traced function: 1, 8, 64 or 512 rounds of busy work */
__attribute__((noipa)) unsigned long spin(int level)
{
	unsigned long x = 0;

	for (long i = 0; i < 1L << (3 * level); i++)
		__asm__ volatile("" : "+r"(x) : : "memory");
	return x;
}

static notrace void print_hist(void)
{
	unsigned long total = 0, max = 1;

	for (int b = 0; b < NR_BUCKETS; b++) {
		total += hist[b];
		if (hist[b] > max)
			max = hist[b];
	}
	for (int b = 0; b < NR_BUCKETS; b++) {
		if (!hist[b])
			continue;
		printf("[%8llu ns, %8llu ns) %6lu |", b ? 1ULL << b : 0, 2ULL << b, hist[b]);
		for (unsigned long i = 0; i < hist[b] * 40 / max; i++)
			putchar('@');
		printf("\n");
	}
	printf("spin: %lu calls timed, %lu unwound\n", total, unwound);
}

int main(void)
{
	int ret;

	ftrace_set_filter(&gops.ops, (unsigned char *)"spin", -1, 1);
	ret = register_ftrace_graph(&gops);
	if (ret) {
		fprintf(stderr, "register_ftrace_graph: %d\n", ret);
		return 1;
	}
	for (int i = 0; i < 4000; i++)
		spin(i % 4);
	unregister_ftrace_graph(&gops);
	print_hist();
	return 0;
}
