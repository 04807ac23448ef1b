// SPDX-License-Identifier: MIT
/*
 * longjmp out of a deep chain of traced functions, and siglongjmp out of a
 * signal handler; afterwards traced calls must still nest and return.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include "tracee.h"

static jmp_buf jb;
static sigjmp_buf sjb;

TRACEE void deep3(int n)
{
	KEEP();
	longjmp(jb, n);
}

TRACEE void deep2(int n)
{
	deep3(n + 1);
	KEEP();
}

TRACEE void deep1(int n)
{
	deep2(n + 1);
	KEEP();
}

TRACEE int after(int x)
{
	KEEP();
	return x + 100;
}

TRACEE void on_signal(int sig)
{
	KEEP();
	siglongjmp(sjb, sig);
}

TRACEE void raiser(void)
{
	raise(SIGUSR1);
	KEEP();
}

TRACEE int jumper(void)
{
	int r = setjmp(jb);

	if (!r)
		deep1(1);
	KEEP();
	return r;
}

int main(void)
{
	struct sigaction sa;
	int r, i;

	/* several rounds: the shadow stack must not grow */
	for (i = 0; i < 3; i++) {
		int j = jumper();

		printf("jumper -> %d, after -> %d\n", j, after(i));
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGUSR1, &sa, NULL);
	r = sigsetjmp(sjb, 1);
	if (!r)
		raiser();
	printf("siglongjmp -> %d, after -> %d\n", r, after(r));
	return 0;
}
