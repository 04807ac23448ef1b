// SPDX-License-Identifier: MIT
/*
 * Signal handlers calling traced functions: one on the thread's stack
 * (SIGUSR1) and one on an alternate signal stack (SIGUSR2), both raised
 * from inside traced functions.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tracee.h"

static volatile sig_atomic_t hits;

TRACEE int in_handler(int sig)
{
	KEEP();
	return sig * 2;
}

TRACEE void handler(int sig)
{
	hits += in_handler(sig) > 0;
	KEEP();
}

TRACEE void raise_it(int sig)
{
	raise(sig);
	KEEP();
}

TRACEE int around(int sig)
{
	raise_it(sig);
	KEEP();
	return sig;
}

int main(void)
{
	struct sigaction sa;
	stack_t ss;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);

	ss.ss_sp = malloc(1 << 16);
	ss.ss_size = 1 << 16;
	ss.ss_flags = 0;
	sigaltstack(&ss, NULL);
	sa.sa_flags = SA_ONSTACK;
	sigaction(SIGUSR2, &sa, NULL);

	around(SIGUSR1);
	around(SIGUSR2);
	printf("handler ran %d times\n", (int)hits);
	return 0;
}
