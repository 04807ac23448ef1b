// SPDX-License-Identifier: MIT
/*
 * fork(): the child calls traced functions and leaves with exit(), a
 * second child with _exit(); the parent waits and goes on.  Output comes
 * out in a fixed order (children print before the parent goes on).
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tracee.h"

TRACEE int child_work(int x)
{
	KEEP();
	return x * 3;
}

TRACEE int parent_work(int x)
{
	KEEP();
	return x + 3;
}

TRACEE pid_t spawn(int how)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		printf("child %d: %d\n", how, child_work(how));
		fflush(stdout);
		if (how)
			_exit(0);
		exit(0);
	}
	KEEP();
	return pid;
}

int main(void)
{
	for (int how = 0; how < 2; how++) {
		int st;

		waitpid(spawn(how), &st, 0);
		printf("parent: child %d exited %d\n", how, WEXITSTATUS(st));
	}
	printf("parent: %d\n", parent_work(4));
	return 0;
}
