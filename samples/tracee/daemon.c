// SPDX-License-Identifier: MIT
/*
 * daemon(): main() calls a traced function, becomes a daemon (the parent
 * leaves from inside daemon() through glibc's own _exit), and the daemon
 * child calls it again after a while.  `usft record` must keep the
 * parent's events and wait for the child.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "tracee.h"

TRACEE int work(int x)
{
	KEEP();
	return x + 1;
}

int main(void)
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
	return 0;
}
