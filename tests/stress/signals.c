// SPDX-License-Identifier: MIT
/*
 * The program's own asynchronous signals while ops come and go: two threads
 * call traced functions and take a queued real-time signal the other sends
 * them, while the main thread registers and unregisters an ops (INT3
 * batches, syncs, the reclaim scan's rendezvous).  Every signal sent is
 * taken exactly once by the program's handler, every call returns the
 * right value.
 *
 * And where each disposition goes (core/signal.c): usft's own handlers
 * with libc's sigaction, the program's through the next sigaction after
 * usft's interposer.  That is libc's in most builds; in a ThreadSanitizer
 * build it is TSan's interceptor, which wraps the program's handler (the
 * kernel holds TSan's wrapper) while usft's own stay usft's.  The program
 * links libusft statically, as the torture program does: its interposer
 * comes before libtsan, so TSan sees the program's handlers only through
 * usft (with libusft.so after libtsan, TSan's interceptor runs first).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "test_common.h"

#define NSEND 4000

TRACEE long cf_sg_f0(long x)
{
	TRACEE_BODY();
	return x * 3 + 1;
}

TRACEE long cf_sg_f1(long x)
{
	TRACEE_BODY();
	return x * 5 + 2;
}

static atomic_int tids[2];
static atomic_long got[2], sent[2], bad;
static atomic_int stop, ready;

static notrace void on_sig(int sig, siginfo_t *si, void *uc)
{
	int self = (int)syscall(SYS_gettid);

	(void)sig;
	(void)si;
	(void)uc;
	for (int i = 0; i < 2; i++)
		if (atomic_load(&tids[i]) == self)
			atomic_fetch_add(&got[i], 1);
}

static notrace void *caller(void *arg)
{
	int me = (int)(long)arg, other = !me;
	long n = 0;

	atomic_store(&tids[me], (int)syscall(SYS_gettid));
	atomic_fetch_add(&ready, 1);
	while (atomic_load(&ready) < 2)
		sched_yield();
	for (long i = 0; !atomic_load(&stop); i++) {
		if (cf_sg_f0(i) != i * 3 + 1 || cf_sg_f1(i) != i * 5 + 2)
			atomic_fetch_add(&bad, 1);
		if (n < NSEND && (i & 15) == 0) {
			/* queued: every one is taken, none merges */
			if (syscall(SYS_tgkill, getpid(), atomic_load(&tids[other]),
				    SIGRTMIN + 2) == 0)
				atomic_fetch_add(&sent[other], 1);
			n++;
		}
	}
	return NULL;
}

Test(stress_signals, program_handlers_take_every_signal_while_ops_churn, .timeout = 300)
{
	struct sigaction sa;
	static struct tc_counter c;
	pthread_t t[2];

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sig;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGRTMIN + 2, &sa, NULL), 0);
	tc_counter_init(&c, 0);
	cr_assert_eq(tc_set_filter(&c.ops, "cf_sg_*", 1), 0);
	for (long i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, caller, (void *)i), 0);
	for (int k = 0; k < 200; k++) {
		cr_assert_eq(register_ftrace_function(&c.ops), 0);
		cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	}
	/* until both have sent NSEND and every signal is taken (up to 30 s) */
	for (int w = 0; w < 30000; w++) {
		if (atomic_load(&got[0]) == atomic_load(&sent[0]) &&
		    atomic_load(&got[1]) == atomic_load(&sent[1]) &&
		    atomic_load(&sent[0]) + atomic_load(&sent[1]) >= 2 * NSEND)
			break;
#ifdef __SANITIZE_THREAD__
		if (atomic_load(&sent[0]) + atomic_load(&sent[1]) >= 2 * NSEND && w > 200)
			break;	/* merged ones never come (below) */
#endif
		usleep(1000);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	cr_assert_eq(atomic_load(&bad), 0);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(atomic_load(&sent[i]), NSEND, "thread %d: %ld sent", i,
			     atomic_load(&sent[i]));
#ifdef __SANITIZE_THREAD__
		/*
		 * TSan defers a program's signal into one pending slot per
		 * signal number: queued instances merge (without usft too)
		 */
		cr_assert(atomic_load(&got[i]) > 0 && atomic_load(&got[i]) <= atomic_load(&sent[i]),
			  "thread %d: %ld of %ld signals taken", i, atomic_load(&got[i]),
			  atomic_load(&sent[i]));
#else
		cr_assert_eq(atomic_load(&got[i]), atomic_load(&sent[i]),
			     "thread %d: %ld of %ld signals taken", i, atomic_load(&got[i]),
			     atomic_load(&sent[i]));
#endif
	}
	cr_assert(tc_count(&c) > 0);
}

/* the kernel's own disposition of @sig: its handler, past every interposer */
static notrace void *kernel_handler(int sig)
{
	struct {
		void *handler;
		unsigned long flags;
		void *restorer;
		unsigned long mask;
	} k;

	memset(&k, 0, sizeof(k));
	cr_assert_eq(syscall(SYS_rt_sigaction, sig, NULL, &k, 8), 0);
	return k.handler;
}

static notrace const char *object_of(void *p)
{
	Dl_info di;

	cr_assert(dladdr(p, &di) && di.dli_fname, "no object holds %p", p);
	return di.dli_fname;
}

static notrace __attribute__((unused)) const char *base(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

Test(stress_signals, dispositions_go_the_way_of_their_owner, .timeout = 60)
{
	const char *usft = object_of((void *)usft_init);
	struct sigaction sa, back;

	cr_assert_eq(usft_init(), 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sig;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGRTMIN + 3, &sa, NULL), 0);
	cr_assert_eq(sigaction(SIGRTMIN + 3, NULL, &back), 0);
	cr_assert(back.sa_sigaction == on_sig, "the program reads back its own handler");
#ifdef __SANITIZE_THREAD__
	/* the program's handler: TSan's wrapper in the kernel, as without usft */
	cr_assert(strstr(base(object_of(kernel_handler(SIGRTMIN + 3))), "libtsan"),
		  "the program's handler went past TSan: the kernel holds one in %s",
		  object_of(kernel_handler(SIGRTMIN + 3)));
#else
	/* usft's wrapper (the handler's signal depth) */
	cr_assert(!strcmp(object_of(kernel_handler(SIGRTMIN + 3)), usft),
		  "the program's handler: the kernel holds one in %s, not usft's wrapper",
		  object_of(kernel_handler(SIGRTMIN + 3)));
#endif
#if defined(__x86_64__)
	/* usft's own (the INT3 handler): usft's in every build, never TSan's */
	cr_assert(!strcmp(object_of(kernel_handler(SIGTRAP)), usft),
		  "usft's SIGTRAP handler: the kernel holds one in %s",
		  object_of(kernel_handler(SIGTRAP)));
#endif
}
