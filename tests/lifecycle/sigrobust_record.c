// SPDX-License-Identifier: MIT
/*
 * Signals under `usft record` (the preload's interposers): an unmodified
 * program whose handler calls sigaction() while the code it interrupted is
 * inside sigaction() must not hang (tests/lifecycle/sigrobust_helper.c).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "test_common.h"

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

/* run @argv with @envp, killed after @secs; exit status or 128+signal */
static int run(char *const argv[], char *const envp[], unsigned secs)
{
	double end = now() + secs;
	pid_t pid = fork();
	int st;

	cr_assert_geq(pid, 0);
	if (!pid) {
		execve(argv[0], argv, envp);
		_exit(127);
	}
	while (waitpid(pid, &st, WNOHANG) != pid) {
		if (now() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			break;
		}
		usleep(5000);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

Test(sigrobust_record, sigaction_from_a_handler_under_usft_record, .timeout = 120)
{
	char out[] = "/tmp/usft-sigrobust-XXXXXX";
	int fd = mkstemp(out);
	char *const argv[] = { USFT_CLI, "record", "-p", "function", "-o", out, "--",
			       SIGROBUST_HELPER, "sigaction", NULL };
	char *const env[] = { "PATH=/usr/bin:/bin", NULL };
	int r;

	cr_assert_geq(fd, 0);
	close(fd);
	r = run(argv, env, 60);
	unlink(out);
	cr_assert_eq(r, 0, "usft record of a handler calling sigaction(): status %d "
		     "(137: it hung and was killed)", r);
}
