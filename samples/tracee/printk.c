// SPDX-License-Identifier: MIT
/*
 * tracee-printk: lines of text into the trace with __trace_puts()
 * (<usft/ftrace.h>, what trace_printk() and trace_puts() of <usft/module.h>
 * call), from traced functions, from a signal handler and a long one.
 * Linked with libusft, so it runs alone (no trace takes the text: 0) and
 * under `usft record` or `usft mount` (the text goes into the trace).
 *
 *   tracee-printk          once, then "ret N" for each line (N: what it returned)
 *   tracee-printk serve    prints "ready", then the same every 20 ms until SIGTERM
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <usft/ftrace.h>

#define THIS_IP ({ __label__ __here; __here: (unsigned long)&&__here; })

static volatile sig_atomic_t stop;
static int rets[4];

static void on_usr1(int sig)
{
	static const char msg[] = "from a handler\n";

	(void)sig;
	rets[2] = __trace_puts(THIS_IP, msg, sizeof(msg));
}

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

__attribute__((noinline)) void printk_inner(void)
{
	static const char msg[] = "hello from inner\n";

	rets[0] = __trace_puts(THIS_IP, msg, sizeof(msg));
}

__attribute__((noinline)) void printk_long(void)
{
	char buf[400];

	/* longer than one trace-cmd small event (112 bytes) */
	for (size_t i = 0; i < 300; i++)
		buf[i] = (char)('a' + i % 26);
	memcpy(buf + 300, "<end>", 6);
	rets[3] = __trace_puts(THIS_IP, buf, (int)sizeof(buf));
}

__attribute__((noinline)) void printk_outer(void)
{
	printk_inner();
	raise(SIGUSR1);
	printk_long();
}

int main(int argc, char **argv)
{
	bool serve = argc > 1 && !strcmp(argv[1], "serve");

	signal(SIGUSR1, on_usr1);
	signal(SIGTERM, on_term);
	if (serve) {
		printf("ready\n");
		fflush(stdout);
	}
	do {
		static const char top[] = "outermost";

		rets[1] = __trace_puts(THIS_IP, top, sizeof(top) - 1);
		printk_outer();
		if (serve)
			usleep(20000);
	} while (serve && !stop);
	if (!serve)
		printf("ret %d %d %d %d\n", rets[0], rets[1], rets[2], rets[3]);
	return 0;
}
