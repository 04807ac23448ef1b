// SPDX-License-Identifier: MIT
/*
 * pthread_exit() from deep inside traced functions (the unwinder must see
 * the real return addresses), with a cleanup handler that calls a traced
 * function; then the main thread goes on tracing.
 */
#include <pthread.h>
#include <stdio.h>
#include "tracee.h"

static int cleaned;

TRACEE void cleanup(void *arg)
{
	cleaned += (int)(long)arg;
	KEEP();
}

TRACEE void leave(long v)
{
	KEEP();
	pthread_exit((void *)v);
}

TRACEE void inner(long v)
{
	leave(v * 2);
	KEEP();
}

TRACEE void *thread_main(void *arg)
{
	pthread_cleanup_push(cleanup, (void *)1L);
	inner((long)arg);
	pthread_cleanup_pop(0);
	return NULL;
}

TRACEE int after_join(int x)
{
	KEEP();
	return x - 1;
}

int main(void)
{
	pthread_t t;
	void *r;

	pthread_create(&t, NULL, thread_main, (void *)21L);
	pthread_join(t, &r);
	printf("thread returned %ld, cleanup ran %d\n", (long)r, cleaned);
	printf("after_join = %d\n", after_join(10));
	return 0;
}
