// SPDX-License-Identifier: MIT
/* Count the calls of one function with <usft/ftrace.h> alone. */
#include <stdio.h>
#include <usft/ftrace.h>

static unsigned long calls;

static notrace void count(unsigned long ip, unsigned long parent_ip,
			  struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	calls++;
}

static struct ftrace_ops ops = { .func = count };

__attribute__((noinline)) void work(void) { asm volatile(""); }

int main(void)
{
	if (ftrace_set_filter(&ops, (unsigned char *)"work", -1, 1) ||
	    register_ftrace_function(&ops))
		return 1;
	for (int i = 0; i < 1000; i++)
		work();
	unregister_ftrace_function(&ops);
	printf("work() was called %lu times\n", calls);
}
