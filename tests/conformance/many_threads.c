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
#include <string.h>
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

static pthread_t parked_tids[NR_PARKED];
static pthread_attr_t small_stack;

/* NR_PARKED threads that ran traced code (registered), waiting on a barrier */
static void park_threads(void)
{
	int n;

	cr_assert_eq(usft_init(), 0);
	cr_assert_eq(ftrace_set_filter_ip(&mt_ops, ftrace_location((unsigned long)mt_func), 0, 0),
		     0);
	cr_assert_eq(register_ftrace_function(&mt_ops), 0);
	cr_assert_eq(pthread_barrier_init(&park, NULL, NR_PARKED + 1), 0);
	pthread_attr_init(&small_stack);
	pthread_attr_setstacksize(&small_stack, PTHREAD_STACK_MIN + 64 * 1024);
	for (n = 0; n < NR_PARKED; n++)
		if (pthread_create(&parked_tids[n], &small_stack, parked, NULL))
			break;
	if (n < NR_PARKED) {
		/* cannot happen on a sane machine; a limit of the test's environment */
		for (int i = n; i < NR_PARKED; i++)
			pthread_barrier_wait(&park);
		cr_skip_test("only %d threads could be created", n);
	}
	pthread_barrier_wait(&park);
	cr_assert_eq(atomic_load(&calls), NR_PARKED);
}

static void release_threads(void)
{
	pthread_barrier_wait(&park);
	for (int i = 0; i < NR_PARKED; i++)
		pthread_join(parked_tids[i], NULL);
	pthread_attr_destroy(&small_stack);
}

Test(tasks_rcu, grace_period_sees_more_than_4096_threads, .timeout = 120)
{
	struct timespec wait = { 0, 200 * 1000 * 1000 };
	pthread_t b, u;
	void *ret;

	park_threads();
	/* thread number NR_PARKED + 2 enters the callback and stays */
	cr_assert_eq(pthread_create(&b, &small_stack, blocker, NULL), 0);
	while (!atomic_load(&inside))
		;
	cr_assert_eq(pthread_create(&u, &small_stack, unregister_it, NULL), 0);
	nanosleep(&wait, NULL);
	atomic_store(&release, 1);
	pthread_join(b, NULL);
	pthread_join(u, &ret);
	cr_expect_eq((long)ret, 0, "unregister_ftrace_function(): %ld", (long)ret);
	cr_expect_eq(atomic_load(&violation), 0,
		     "unregister_ftrace_function() returned while a thread was in the callback");
	release_threads();
	ftrace_free_filter(&mt_ops);
}

/*
 * The thread rendezvous reaches every thread too: a reclaim scan (which
 * lets freed trampoline memory be handed out again once no thread's pc is
 * in trampoline memory) must see thread NR_PARKED + 2 spinning inside a
 * trampoline, so nothing freed meanwhile is reused.
 */
#if defined(__x86_64__)
/* 1: mov (%rdi),%eax; test %eax,%eax; je 1b; ret */
static const unsigned char spin_code[] = { 0x8b, 0x07, 0x85, 0xc0, 0x74, 0xfa, 0xc3 };
#elif defined(__aarch64__)
/* 1: ldr w1, [x0]; cbz w1, 1b; ret */
static const unsigned int spin_code[] = { 0xb9400001, 0x34ffffe1, 0xd65f03c0 };
#endif

#define NR_CHUNKS 400

static void *spin_in_trampoline(void *code)
{
	((void (*)(atomic_int *))code)(&release);
	return NULL;
}

Test(tasks_rcu, reclaim_scan_sees_more_than_4096_threads, .timeout = 120)
{
	static unsigned long addr[NR_CHUNKS];
	unsigned int reused = 0;
	void *spin;
	pthread_t s;

	park_threads();
	spin = usft_alloc_trampoline(spin_code, sizeof(spin_code), 0);
	cr_assert_not_null(spin, "usft_alloc_trampoline: %s", strerror(errno));
	cr_assert_eq(pthread_create(&s, &small_stack, spin_in_trampoline, spin), 0);
	for (int i = 0; i < NR_CHUNKS; i++) {
		void *p = usft_alloc_trampoline(spin_code, sizeof(spin_code), 0);

		cr_assert_not_null(p, "chunk %d: %s", i, strerror(errno));
		addr[i] = (unsigned long)p;
		for (int k = 0; k < i; k++)
			reused += addr[k] == addr[i];
		usft_free_trampoline(p, sizeof(spin_code));
	}
	atomic_store(&release, 1);
	pthread_join(s, NULL);
	cr_expect_eq(reused, 0, "trampoline memory was reused %u times while a thread ran in it",
		     reused);
	usft_free_trampoline(spin, sizeof(spin_code));
	/* with no thread in trampoline memory, scans come out clean: memory is reused again */
	reused = 0;
	for (int i = 0; i < NR_CHUNKS && !reused; i++) {
		void *p = usft_alloc_trampoline(spin_code, sizeof(spin_code), 0);

		cr_assert_not_null(p, "chunk %d: %s", i, strerror(errno));
		for (int k = 0; k < NR_CHUNKS && !reused; k++)
			reused = addr[k] == (unsigned long)p;
		usft_free_trampoline(p, sizeof(spin_code));
	}
	cr_expect(reused, "no scan came out clean with %d threads: freed trampoline memory is "
		  "never reused", NR_PARKED + 1);
	release_threads();
	unregister_ftrace_function(&mt_ops);
	ftrace_free_filter(&mt_ops);
}
