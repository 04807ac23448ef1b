// SPDX-License-Identifier: MIT
/*
 * daemon(): main() calls a traced function, becomes a daemon (the parent
 * leaves from inside daemon() through glibc's own _exit), and the daemon
 * child calls it again after a while.  `usft record` must keep the
 * parent's events and wait for the child.  With "serve", the child then
 * prints its pid and calls serve() every 100 ms for 60 s (a server that
 * runs on: `-T serve@finish` ends the recording while it does).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tracee.h"

TRACEE int work(int x)
{
	KEEP();
	return x + 1;
}

TRACEE void serve(void)
{
	KEEP();
}

int main(int argc, char **argv)
{
	int r = work(1);

	fflush(stdout);
	if (daemon(1, 1) < 0) {
		perror("daemon");
		return 1;
	}
	/* the parent is gone: only the daemon runs from here */
	usleep(200 * 1000);
	r = work(r);
	printf("daemon: %d\n", r);
	if (argc > 1 && !strcmp(argv[1], "serve")) {
		printf("daemon pid %d\n", (int)getpid());
		fflush(stdout);
		for (int i = 0; i < 600; i++) {
			serve();
			usleep(100 * 1000);
		}
	}
	return 0;
}
