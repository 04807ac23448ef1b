// SPDX-License-Identifier: MIT
/*
 * Threads: four workers run the same call tree, main joins them.
 * "threads churn": 200 short-lived threads, 20 at a time (ring slots of
 * exited threads must come back, and events without one are counted).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "tracee.h"

#define NR_WORKERS 4

TRACEE long step(long x)
{
	KEEP();
	return x * 7 % 1000003;
}

TRACEE long work(long seed, int n)
{
	long v = seed;

	for (int i = 0; i < n; i++)
		v = step(v + i);
	KEEP();
	return v;
}

TRACEE void *worker(void *arg)
{
	long id = (long)arg;

	return (void *)work(id + 1, 3);
}

static int churn(void)
{
	long sum = 0;

	for (int round = 0; round < 10; round++) {
		pthread_t th[20];

		for (long i = 0; i < 20; i++)
			pthread_create(&th[i], NULL, worker, (void *)i);
		for (int i = 0; i < 20; i++) {
			void *r;

			pthread_join(th[i], &r);
			sum += (long)r;
		}
	}
	printf("churn sum = %ld\n", sum);
	return 0;
}

int main(int argc, char **argv)
{
	pthread_t th[NR_WORKERS];
	long sum = 0;

	if (argc > 1 && !strcmp(argv[1], "churn"))
		return churn();

	for (long i = 0; i < NR_WORKERS; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	for (int i = 0; i < NR_WORKERS; i++) {
		void *r;

		pthread_join(th[i], &r);
		sum += (long)r;
	}
	printf("sum = %ld\n", sum);
	printf("main work = %ld\n", work(100, 2));
	return 0;
}
