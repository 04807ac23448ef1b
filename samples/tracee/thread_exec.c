// SPDX-License-Identifier: MIT
/*
 * exec from a thread that is not the main one: main() starts a thread
 * and joins it, the thread execs this program again with an argument.
 * The first image's main() entry (kept back by the graph tracer in the
 * main thread) must still reach the trace.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "tracee.h"

static char *self;

TRACEE int second_work(int x)
{
	KEEP();
	return x * 2;
}

TRACEE void *exec_thread(void *arg)
{
	fflush(stdout);
	execl("/proc/self/exe", self, "second", (char *)NULL);
	perror("execl");
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t th;

	if (argc > 1 && !strcmp(argv[1], "second")) {
		printf("second image: %d\n", second_work(21));
		return 0;
	}
	self = argv[0];
	printf("first image\n");
	pthread_create(&th, NULL, exec_thread, NULL);
	pthread_join(th, NULL);
	return 1;
}
