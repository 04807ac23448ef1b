/* SPDX-License-Identifier: MIT */
/*
 * Installed-package consumer: trace work() through <usft/ftrace.h> only.
 * Exit 0 iff the callback ran exactly once per call while registered
 * (1000 times) and never after unregister.
 */
#include <stdio.h>
#include <usft/ftrace.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif
#endif

#define CALLS 1000

static volatile int sink;
static unsigned long hits;

NOINLINE int work(int x)
{
	sink += x;
	return sink;
}

static notrace void count_work(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op,
			       struct ftrace_regs *fregs)
{
	(void)ip;
	(void)parent_ip;
	(void)op;
	(void)fregs;
	__atomic_fetch_add(&hits, 1, __ATOMIC_RELAXED);
}

static struct ftrace_ops ops = {
	.func = count_work,
};

int main(void)
{
	int ret, i;

	ret = ftrace_set_filter(&ops, (unsigned char *)"work", -1, 1);
	if (ret) {
		fprintf(stderr, "app: ftrace_set_filter(\"work\") = %d\n", ret);
		return 1;
	}
	ret = register_ftrace_function(&ops);
	if (ret) {
		fprintf(stderr, "app: register_ftrace_function = %d\n", ret);
		return 1;
	}
	for (i = 0; i < CALLS; i++)
		work(i);
	ret = unregister_ftrace_function(&ops);
	if (ret) {
		fprintf(stderr, "app: unregister_ftrace_function = %d\n", ret);
		return 1;
	}
	work(1); /* no longer traced */
	ftrace_free_filter(&ops);

	printf("app: work() called %d times, callback ran %lu times\n", CALLS + 1, hits);
	return hits == CALLS ? 0 : 1;
}
