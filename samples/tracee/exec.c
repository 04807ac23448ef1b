// SPDX-License-Identifier: MIT
/*
 * exec: the first image calls traced functions and execs itself with an
 * argument; the second image calls others and exits.  Both images write
 * to the same trace file, each under its own session.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "tracee.h"

TRACEE int before_exec(int x)
{
	KEEP();
	return x + 1;
}

TRACEE int after_exec(int x)
{
	KEEP();
	return x * 2;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "second")) {
		printf("second image: %d\n", after_exec(21));
		return 0;
	}
	printf("first image: %d\n", before_exec(1));
	fflush(stdout);
	execl("/proc/self/exe", argv[0], "second", (char *)NULL);
	perror("execl");
	return 1;
}
