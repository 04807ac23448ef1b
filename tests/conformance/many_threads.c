// SPDX-License-Identifier: MIT
/*
 * No limit on threads for the grace period: with more than 4096 threads
 * that have run traced code, unregister_ftrace_function() still waits for
 * a thread inside the callback (kernel: synchronize_rcu_tasks() sees every
 * task).  The threads are parked on a barrier so the test stays fast.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "test_common.h"

#define NR_PARKED 4400

TRACEE long mt_func(long x)
{
	TRACEE_BODY();
	return x + 1;
}

static atomic_int inside, release, unreg_done, violation;
static atomic_long calls;

notrace static void mt_cb(unsigned long ip, unsigned long pip, struct ftrace_ops *op,
			  struct ftrace_regs *fregs)
{
	atomic_fetch_add(&calls, 1);
	if (ftrace_regs_get_argument(fregs, 0) != 7)
		return;
	/* the blocking thread: unregister must not return while it is here */
	atomic_store(&inside, 1);
	while (!atomic_load(&release))
		if (atomic_load(&unreg_done))
			atomic_store(&violation, 1);
}

static struct ftrace_ops mt_ops = { .func = mt_cb, .flags = FTRACE_OPS_FL_SAVE_REGS };
static pthread_barrier_t park;

static void *parked(void *arg)
{
	(void)arg;
	mt_func(1);			/* first traced call: the thread registers */
	pthread_barrier_wait(&park);	/* all in */
	pthread_barrier_wait(&park);	/* released at the end */
	return NULL;
}

static void *blocker(void *arg)
{
	(void)arg;
	mt_func(7);
	return NULL;
}

static void *unregister_it(void *arg)
{
	long ret = unregister_ftrace_function(&mt_ops) ? -errno : 0;

	(void)arg;
	atomic_store(&unreg_done, 1);
	return (void *)ret;
}

Test(tasks_rcu, grace_period_sees_more_than_4096_threads, .timeout = 120)
{
	static pthread_t tids[NR_PARKED];
	struct timespec wait = { 0, 200 * 1000 * 1000 };
	pthread_t b, u;
	pthread_attr_t a;
	void *ret;
	int n;

	cr_assert_eq(usft_init(), 0);
	cr_assert_eq(ftrace_set_filter_ip(&mt_ops, ftrace_location((unsigned long)mt_func), 0, 0),
		     0);
	cr_assert_eq(register_ftrace_function(&mt_ops), 0);
	cr_assert_eq(pthread_barrier_init(&park, NULL, NR_PARKED + 1), 0);
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, PTHREAD_STACK_MIN + 64 * 1024);
	for (n = 0; n < NR_PARKED; n++)
		if (pthread_create(&tids[n], &a, parked, NULL))
			break;
	if (n < NR_PARKED) {
		/* cannot happen on a sane machine; a limit of the test's environment */
		for (int i = n; i < NR_PARKED; i++)
			pthread_barrier_wait(&park);
		cr_skip_test("only %d threads could be created", n);
	}
	pthread_barrier_wait(&park);
	cr_assert_eq(atomic_load(&calls), NR_PARKED);

	/* thread number NR_PARKED + 2 enters the callback and stays */
	cr_assert_eq(pthread_create(&b, &a, blocker, NULL), 0);
	while (!atomic_load(&inside))
		;
	cr_assert_eq(pthread_create(&u, &a, unregister_it, NULL), 0);
	nanosleep(&wait, NULL);
	atomic_store(&release, 1);
	pthread_join(b, NULL);
	pthread_join(u, &ret);
	cr_expect_eq((long)ret, 0, "unregister_ftrace_function(): %ld", (long)ret);
	cr_expect_eq(atomic_load(&violation), 0,
		     "unregister_ftrace_function() returned while a thread was in the callback");

	pthread_barrier_wait(&park);
	for (int i = 0; i < NR_PARKED; i++)
		pthread_join(tids[i], NULL);
	pthread_attr_destroy(&a);
	ftrace_free_filter(&mt_ops);
}
