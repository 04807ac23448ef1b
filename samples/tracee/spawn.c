// SPDX-License-Identifier: MIT
/*
 * Children started with an environment of their own, one without usft's
 * variables: posix_spawn(), posix_spawnp(), execve() and execle() after
 * fork().  Each child runs this program again ("child N"), calls a traced
 * function and exits; the parent waits for each in turn.
 */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tracee.h"

static char *const child_env[] = { "PATH=/usr/bin:/bin", "SPAWN_TEST=1", NULL };

TRACEE int child_work(int n)
{
	KEEP();
	return n * 100;
}

TRACEE void wait_child(pid_t pid)
{
	int st;

	if (pid > 0)
		waitpid(pid, &st, 0);
	KEEP();
}

TRACEE pid_t start(int how, char *self)
{
	char num[8];
	char *argv[] = { "tracee-spawn", "child", num, NULL };
	pid_t pid = -1;

	snprintf(num, sizeof(num), "%d", how);
	fflush(stdout);
	switch (how) {
	case 1:
		if (posix_spawn(&pid, self, NULL, NULL, argv, child_env))
			pid = -1;
		break;
	case 2:
		if (posix_spawnp(&pid, self, NULL, NULL, argv, child_env))
			pid = -1;
		break;
	case 3:
		pid = fork();
		if (pid == 0) {
			execve(self, argv, child_env);
			_exit(127);
		}
		break;
	case 4:
		pid = fork();
		if (pid == 0) {
			execle(self, "tracee-spawn", "child", num, (char *)NULL, child_env);
			_exit(127);
		}
		break;
	}
	KEEP();
	return pid;
}

int main(int argc, char **argv)
{
	char self[4096];
	ssize_t n;

	if (argc > 2 && !strcmp(argv[1], "child")) {
		printf("child %s: %d (SPAWN_TEST=%s)\n", argv[2], child_work(atoi(argv[2])),
		       getenv("SPAWN_TEST") ? getenv("SPAWN_TEST") : "unset");
		return 0;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 1;
	self[n] = 0;
	for (int how = 1; how <= 4; how++)
		wait_child(start(how, self));
	printf("parent done\n");
	return 0;
}
