/* direct.c - lab 3: attach a direct trampoline, retarget it, detach it. */
#include <stdio.h>
#include <string.h>
#include <usft/ftrace.h>
#include <usft/usft.h>

extern char tramp_a[], tramp_b[];	/* tramp-x86_64.S */
static unsigned long hits_a, hits_b, count_hits;

notrace void seen_a(long x, long y) { hits_a++; }
notrace void seen_b(long x, long y) { hits_b++; }

static notrace void count(unsigned long ip, unsigned long parent_ip,
			  struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	count_hits++;
}

/* noipa: GCC must not see that scale() has no side effects and merge calls */
__attribute__((noipa)) long scale(long x, long y)
{
	return x * y;
}

/* what scale()'s site does now */
static notrace void show(const char *when)
{
	unsigned long ip = ftrace_location((unsigned long)scale), target;
	unsigned char b[5];
	int rel;

	usft_site_bytes(ip, b, sizeof(b));
	memcpy(&rel, b + 1, sizeof(rel));
	target = ip + 5 + rel;
	if (b[0] == 0xe8 || b[0] == 0xe9)	/* call rel32, jmp rel32 (jmp mode) */
		printf("%-22s the site %s %s\n", when, b[0] == 0xe8 ? "calls" : "jumps to",
		       target == (unsigned long)tramp_a ? "tramp_a" :
		       target == (unsigned long)tramp_b ? "tramp_b" : "a ftrace caller");
	else if (b[0] == 0x0f && b[1] == 0x1f)	/* nopl 0x0(%rax,%rax,1) */
		printf("%-22s the site is a nop\n", when);
	else
		printf("%-22s the site starts with %02x: neither a nop nor a call\n", when, b[0]);
}

static notrace long run(void)
{
	long sum = 0;

	for (long i = 0; i < 10; i++)
		sum += scale(i, 3);
	return sum;
}

int main(void)
{
	static struct ftrace_ops direct, other = { .func = count };
	long bad = 0;

	show("start:");
	ftrace_set_filter_ip(&direct, (unsigned long)scale, 0, 0);
	if (register_ftrace_direct(&direct, (unsigned long)tramp_a))
		return 1;
	show("register_ftrace_direct:");
	bad += run() != 135;

	modify_ftrace_direct(&direct, (unsigned long)tramp_b);
	show("modify_ftrace_direct:");
	bad += run() != 135;

	ftrace_set_filter_ip(&other, (unsigned long)scale, 0, 0);
	register_ftrace_function(&other);
	show("plus a function ops:");
	bad += run() != 135;
	unregister_ftrace_function(&other);
	show("ops gone again:");

	unregister_ftrace_direct(&direct, (unsigned long)tramp_b, true);
	show("unregister:");
	bad += run() != 135;
	printf("tramp_a ran %lu times, tramp_b %lu, the function ops %lu; %ld wrong results\n",
	       hits_a, hits_b, count_hits, bad);
	return bad != 0;
}
