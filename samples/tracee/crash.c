// SPDX-License-Identifier: MIT
/*
 * crash MODE N PROGRESS: two threads call step() (main) and step2() (a
 * second thread) in a loop; before each call the thread stores the call's
 * number in PROGRESS (a file mapped MAP_SHARED: it survives any death).
 * After N calls of step() the main thread ends the process by MODE:
 *   segv   a store through NULL in crash_here() (SIGSEGV)
 *   abort  abort() from crash_here() (SIGABRT)
 *   bus    a store to a page past the end of a file, in crash_here() (SIGBUS)
 *   exit   _exit(3) from crash_here()
 *   loop   none: loops until killed from outside (N ignored)
 * With a fourth argument "go", the N calls are counted only once the word
 * PROGRESS[2] is not 0 (an attach test stores it once the recording runs;
 * the calls before are made all the same).
 * With a fifth argument "child", the main thread forks once the word
 * PROGRESS[2] is not 0: the child stores its pid in PROGRESS[5], calls
 * cstep() (its number in PROGRESS[4] before each call) and ends by MODE
 * after N calls; the parent loops on as in "loop", reaps the child and
 * stores 1 in PROGRESS[6] once it has (tests/e2e/crash.py,
 * attach_child_crash_safe: the rings of a child forked while recorded).
 * The crash-safety tests (tests/e2e/crash.py, crash_safe and
 * attach_crash_safe) check that every call the progress file counts is in
 * the trace.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tracee.h"

static volatile long *progress;

TRACEE long leaf(long x)
{
	KEEP();
	return x * 3 + 1;
}

TRACEE long step(long x)
{
	KEEP();
	return leaf(x) + 1;
}

TRACEE long step2(long x)
{
	KEEP();
	return leaf(x) - 1;
}

TRACEE void crash_here(const char *mode)
{
	KEEP();
	if (!strcmp(mode, "segv")) {
		*(volatile int *)(unsigned long)progress[3] = 1;	/* progress[3] is 0 */
	} else if (!strcmp(mode, "abort")) {
		abort();
	} else if (!strcmp(mode, "bus")) {
		char name[] = "/tmp/usft-crash-bus-XXXXXX";
		int fd = mkstemp(name);
		char *p;

		unlink(name);
		p = fd >= 0 ? mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : NULL;
		if (p && p != MAP_FAILED)
			p[4096] = 1;	/* the file is empty: SIGBUS */
		raise(SIGBUS);
	}
	_exit(3);
}

TRACEE long cstep(long x)
{
	KEEP();
	return leaf(x) + 2;
}

/* the forked child of the "child" mode: N calls of cstep(), then MODE */
static void child_main(const char *mode, long n)
{
	long v = 0, i;

	progress[5] = getpid();
	for (i = 0; !strcmp(mode, "loop") || i < n; i++) {
		progress[4] = i;
		v = cstep(v);
		if (!(i % 64))
			usleep(100);
	}
	progress[4] = i;
	crash_here(mode);
	_exit((int)(v & 1));
}

static void *second(void *arg)
{
	long v = 0;

	for (long i = 0;; i++) {
		progress[1] = i;
		v = step2(v);
		if (!(i % 64))
			usleep(100);	/* traces of a few MB, not hundreds */
	}
	return arg;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "loop";
	long n = argc > 2 ? atol(argv[2]) : 1000, v = 0, i, left;
	bool go = argc > 4 && !strcmp(argv[4], "go");
	bool child = argc > 5 && !strcmp(argv[5], "child");
	pid_t kid = -1;
	pthread_t t;
	int fd;

	if (argc < 4) {
		fprintf(stderr, "usage: crash segv|abort|bus|exit|loop N PROGRESS [go [child]]\n");
		return 2;
	}
	fd = open(argv[3], O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, 4096))
		return 1;
	progress = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (progress == MAP_FAILED)
		return 1;
	progress[0] = progress[1] = progress[4] = -1;
	pthread_create(&t, NULL, second, NULL);
	for (i = 0, left = n; child || !strcmp(mode, "loop") || left > 0; i++) {
		progress[0] = i;
		v = step(v);
		if (child && kid < 0 && progress[2]) {
			kid = fork();
			if (kid == 0)
				child_main(mode, n);
		}
		if (kid > 0 && !(i % 16) && waitpid(kid, NULL, WNOHANG) == kid) {
			progress[6] = 1;
			kid = 0;
		}
		if (!go || progress[2])
			left--;
		if (!(i % 64))
			usleep(100);
	}
	progress[0] = i;
	crash_here(mode);
	return (int)(v & 1);
}
