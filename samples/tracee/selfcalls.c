// SPDX-License-Identifier: MIT
/*
 * A program with its own malloc() family (traced functions that forward
 * to glibc's): whatever usft itself allocates in this process, in a forked
 * child and in its writer thread goes through them too, and must never be
 * recorded.  Only the program's own calls may appear in the trace.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tracee.h"

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

TRACEE void *malloc(size_t n)
{
	return __libc_malloc(n);
}

TRACEE void *calloc(size_t n, size_t m)
{
	return __libc_calloc(n, m);
}

TRACEE void *realloc(void *p, size_t n)
{
	return __libc_realloc(p, n);
}

TRACEE void free(void *p)
{
	__libc_free(p);
}

static char *volatile keep;

TRACEE int use_heap(int n)
{
	char *p = malloc((size_t)n);

	keep = p;	/* not a malloc/free pair the compiler may drop */
	p[0] = (char)n;
	n = keep[0];
	free(keep);
	KEEP();
	return n;
}

int main(void)
{
	pid_t pid;
	int st;

	/* stdout's buffer now, outside the traced part */
	printf("start\n");
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		use_heap(2);
		_exit(0);
	}
	waitpid(pid, &st, 0);
	use_heap(1);
	printf("done\n");
	return 0;
}
