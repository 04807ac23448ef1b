// SPDX-License-Identifier: MIT
/* The runner of the criterion stand-in (criterion-shim/criterion/criterion.h). */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include "criterion/criterion.h"

static struct shim_test *head, **tail = &head;

void shim_register(struct shim_test *t)
{
	*tail = t;
	tail = &t->next;
}

void shim_fail(const char *file, int line, const char *expr, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "[----] %s:%d: Assertion Failed: %s\n[----]   ", file, line, expr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	_exit(1);
}

void shim_log(const char *fmt, ...)
{
	va_list ap;

	fputs("[----] ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int main(int argc, char **argv)
{
	int failed = 0, n = 0;

	for (struct shim_test *t = head; t; t = t->next, n++) {
		pid_t pid;
		int st;

		fprintf(stderr, "[RUN ] %s::%s\n", t->suite, t->name);
		fflush(stderr);
		pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (!pid) {
			if (t->timeout > 0)
				alarm((unsigned)t->timeout);
			t->fn();
			fflush(NULL);
			_exit(0);
		}
		if (waitpid(pid, &st, 0) != pid) {
			perror("waitpid");
			return 1;
		}
		if (WIFEXITED(st) && !WEXITSTATUS(st)) {
			fprintf(stderr, "[PASS] %s::%s\n", t->suite, t->name);
		} else {
			failed++;
			if (WIFSIGNALED(st))
				fprintf(stderr, "[FAIL] %s::%s: signal %d\n", t->suite, t->name,
					WTERMSIG(st));
			else
				fprintf(stderr, "[FAIL] %s::%s: exit %d\n", t->suite, t->name,
					WEXITSTATUS(st));
		}
	}
	fprintf(stderr, "[====] Synthesis: Tested: %d | Passing: %d | Failing: %d\n", n,
		n - failed, failed);
	return failed ? 1 : 0;
}
