// SPDX-License-Identifier: MIT
/*
 * An unmodified program (built with the patch flags, not linked with
 * libusft) run under `usft record` by tests/lifecycle/sigrobust_record.c:
 *
 *   sigaction   a timer storm whose handler calls sigaction() while the
 *               main thread calls sigaction() in a loop (must not hang)
 *
 * Exit 0 when fine; prints what went wrong otherwise.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) long sh_work(long x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static atomic_long runs;

static void handler(int sig)
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	sigaction(SIGUSR1, &sa, &old);
	atomic_fetch_add(&runs, 1);
}

static int sigaction_storm(void)
{
	struct itimerval it = { .it_interval = { 0, 20 }, .it_value = { 0, 20 } };
	struct sigaction sa;
	double end = now() + 0.5;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	for (long i = 0; now() < end || atomic_load(&runs) < 100; i++) {
		sa.sa_handler = i & 1 ? SIG_IGN : SIG_DFL;
		sigaction(SIGUSR2, &sa, NULL);
		sh_work(i);
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	printf("sigaction: %ld handler runs\n", atomic_load(&runs));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "sigaction"))
		return sigaction_storm();
	fprintf(stderr, "usage: %s sigaction\n", argv[0]);
	return 2;
}
