/* callops.c - lab 5: an arm64 CALL_OPS site, its literal and its reach. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <usft/ftrace.h>
#include <usft/usft.h>
#ifndef __aarch64__
#error "this lab program is arm64 code: build it with aarch64-linux-gnu-gcc"
#endif

static unsigned long hits;
static struct ftrace_ops ops_a, ops_b, direct;
static unsigned long nop_literal;	/* the literal's value after load */
static unsigned long tramp;		/* our direct trampoline, once allocated */

static notrace void count(unsigned long ip, unsigned long parent_ip,
			  struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	hits++;
}

__attribute__((noipa)) long work(long x)
{
	return x + 1;
}

static notrace const char *literal_name(unsigned long v)
{
	if (v == (unsigned long)&ops_a)
		return "&ops_a";
	if (v == (unsigned long)&ops_b)
		return "&ops_b";
	if (v == (unsigned long)&direct)
		return "&direct";
	if (v == nop_literal)
		return "ftrace_nop_ops";
	return "ftrace_list_ops";
}

/* the two words at the entry and the literal 8 bytes before the function */
static notrace void show(const char *when)
{
	unsigned long ip = ftrace_location((unsigned long)work);
	const uint32_t *site = (const uint32_t *)ip;
	unsigned long lit = *(const unsigned long *)(((ip + 4) & ~7UL) - 16);
	uint32_t insn = site[0];
	char what[64] = "NOP";

	if ((insn & 0xfc000000) == 0x94000000) {	/* BL imm26 */
		unsigned long to = ip + (long)((int32_t)(insn << 6) >> 6) * 4;

		snprintf(what, sizeof(what), "BL %s", to == tramp ? "tramp" : "caller");
	}
	if (!nop_literal)
		nop_literal = lit;
	printf("%-22s %08x %08x   literal=%-16s %s\n", when, site[-1], insn,
	       literal_name(lit), what);
}

/* an empty direct trampoline (x9 = return address, x30 = the body) */
static const uint32_t empty_tramp[] = {
	0xaa1e03ea,	/* mov x10, x30 */
	0xaa0903fe,	/* mov x30, x9  */
	0xd65f0140,	/* ret x10      */
};

int main(void)
{
	struct usft_stats st = { .sz = sizeof(st) };
	long sum = 0;

	usft_init();
	show("loaded:");
	ops_a.func = count;
	ftrace_set_filter_ip(&ops_a, (unsigned long)work, 0, 0);
	register_ftrace_function(&ops_a);
	show("ops_a:");
	ops_b.func = count;
	ftrace_set_filter_ip(&ops_b, (unsigned long)work, 0, 0);
	register_ftrace_function(&ops_b);
	show("ops_a + ops_b:");
	for (long i = 0; i < 100; i++)
		sum += work(i);
	unregister_ftrace_function(&ops_b);
	unregister_ftrace_function(&ops_a);
	show("none:");

	tramp = (unsigned long)usft_alloc_trampoline(empty_tramp, sizeof(empty_tramp),
						      (unsigned long)work);
	ftrace_set_filter_ip(&direct, (unsigned long)work, 0, 0);
	if (!tramp || register_ftrace_direct(&direct, tramp))
		return 1;
	show("direct:");
	for (long i = 0; i < 100; i++)
		sum += work(i);
	usft_stat(&st);
	unregister_ftrace_direct(&direct, tramp, true);
	printf("callbacks %lu, results %s, direct sites in range %lu, out of range %lu\n",
	       hits, sum == 2 * 5050 ? "ok" : "WRONG", st.nr_direct_in_range,
	       st.nr_direct_out_of_range);
	return sum != 2 * 5050;
}
