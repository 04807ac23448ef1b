// SPDX-License-Identifier: MIT
/*
 * core/rcu_tasks.c - a userspace tasks-RCU for code and data that traced
 * threads may be using (kernel: synchronize_rcu_tasks() / call_rcu_tasks()).
 *
 * The traced program's threads never announce quiescent states and cannot be
 * asked to register with liburcu.  Instead the entry code of every caller
 * and trampoline increments usft_task.nest (initial-exec TLS, one
 * instruction) and the exit code decrements it, bumping usft_task.gen when it
 * drops to zero.  A thread registers its usft_task the first time it enters
 * (lock-free: one CAS pushes it on a stack of new threads; no allocation,
 * the links live in the thread's own usft_task, so there is no limit on
 * threads) and leaves at thread exit through a pthread key destructor.
 * Grace periods, under the registry lock, first move the new threads to
 * the registry list, then walk it.
 *
 * A grace period: a process-wide memory barrier (membarrier), then for every
 * registered thread wait until it is seen outside (nest == 0) or has left
 * the outermost level since (gen changed).  On x86-64 the span is kept as
 * span_in/span_out/span_gen instead (internal.h says why); the wait covers
 * both forms.
 *
 * Known limit (docs/design.md): the first instruction of a trampoline runs
 * before nest is incremented, and the last one (ret) after it was
 * decremented; a thread preempted exactly there is not seen.  Trampoline
 * memory is therefore recycled only after a further grace period and in
 * FIFO order (runtime/mem), which makes that window practically closed.
 */
#include <linux/membarrier.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "core/arch.h"
#include "core/internal.h"
#include "core/text.h"

__thread struct usft_task usft_task __attribute__((tls_model("initial-exec")));

_Static_assert(offsetof(struct usft_task, nest) == USFT_TASK_NEST &&
	       offsetof(struct usft_task, gen) == USFT_TASK_GEN &&
	       offsetof(struct usft_task, state) == USFT_TASK_STATE &&
	       offsetof(struct usft_task, in_tramp_prog) == USFT_TASK_IN_PROG &&
	       offsetof(struct usft_task, orig_depth) == USFT_TASK_ORIG_DEPTH &&
	       offsetof(struct usft_task, orig_stack) == USFT_TASK_ORIG_STACK &&
	       offsetof(struct usft_task, span_in) == USFT_TASK_SPAN_IN &&
	       offsetof(struct usft_task, span_out) == USFT_TASK_SPAN_OUT &&
	       offsetof(struct usft_task, span_gen) == USFT_TASK_SPAN_GEN,
	       "assembly offsets of struct usft_task");

/*
 * tasks_incoming: threads that registered since the last drain (pushed by
 * usft_task_register(), taken whole by tasks_drain_incoming()).
 * tasks_list: every other registered thread, a circular list through
 * reg_next/reg_prev with tasks_list as its head; changed and walked only
 * under usft_tasks_lock, which a thread's exit takes before its usft_task
 * goes away.
 */
static struct usft_task *tasks_incoming;
static struct usft_task tasks_list = { .reg_next = &tasks_list, .reg_prev = &tasks_list };
static pthread_mutex_t usft_tasks_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t usft_task_key;
static int usft_membarrier_cmd;	/* the barrier command registered, 0: none */

unsigned long usft_task_tpoff(void)
{
	/* x86-64: %fs:0 (the TCB's self pointer), arm64: tpidr_el0 */
	unsigned long tp = (unsigned long)__builtin_thread_pointer();

	return (unsigned long)&usft_task - tp;
}

static void tasks_list_add(struct usft_task *t)
{
	t->reg_next = tasks_list.reg_next;
	t->reg_prev = &tasks_list;
	tasks_list.reg_next->reg_prev = t;
	tasks_list.reg_next = t;
	t->listed = true;
}

/* Move the threads registered since the last drain to the list.  Lock held. */
static void tasks_drain_incoming(void)
{
	struct usft_task *t = __atomic_exchange_n(&tasks_incoming, NULL, __ATOMIC_ACQUIRE);

	while (t) {
		struct usft_task *next = t->incoming;

		tasks_list_add(t);
		t = next;
	}
}

#define for_each_usft_task(t) \
	for (t = tasks_list.reg_next; t != &tasks_list; t = t->reg_next)

static void usft_task_exit(void *p)
{
	struct usft_task *t = p;

	pthread_mutex_lock(&usft_tasks_lock);
	if (!t->listed)
		tasks_drain_incoming();	/* its push is done: this moves it too */
	if (t->listed) {
		t->reg_prev->reg_next = t->reg_next;
		t->reg_next->reg_prev = t->reg_prev;
		t->reg_next = t->reg_prev = NULL;
		t->listed = false;
	}
	t->state = USFT_TASK_UNKNOWN;
	pthread_mutex_unlock(&usft_tasks_lock);
}

/*
 * Called from the entry code of callers/trampolines when state is
 * USFT_TASK_UNKNOWN (0).  Must
 * not allocate, lock or make syscalls: a CAS onto the stack of new threads
 * and a pthread_setspecific() of a key created at init (below the
 * first-level key limit, which glibc serves from the thread descriptor
 * without allocating).  Nothing can run out: every thread is tracked.
 */
void usft_task_register(void)
{
	struct usft_task *t = &usft_task, *head;

	if (t->state != USFT_TASK_UNKNOWN)
		return;
	t->state = USFT_TASK_REGISTERING;
	head = __atomic_load_n(&tasks_incoming, __ATOMIC_RELAXED);
	do {
		t->incoming = head;
	} while (!__atomic_compare_exchange_n(&tasks_incoming, &head, t, true, __ATOMIC_SEQ_CST,
					      __ATOMIC_RELAXED));
	pthread_setspecific(usft_task_key, t);
	smp_store_release(&t->state, USFT_TASK_REGISTERED);
}

static void usft_tasks_atfork_child(void)
{
	struct usft_task *t = &usft_task;

	/* Only the forking thread exists in the child. */
	pthread_mutex_init(&usft_tasks_lock, NULL);
	tasks_incoming = NULL;
	tasks_list.reg_next = tasks_list.reg_prev = &tasks_list;
	t->listed = false;	/* its links point into the parent's list */
	if (t->state == USFT_TASK_REGISTERED)
		tasks_list_add(t);
	else
		t->state = USFT_TASK_UNKNOWN;
}

void usft_tasks_init(void)
{
	pthread_key_create(&usft_task_key, usft_task_exit);
	pthread_atfork(NULL, NULL, usft_tasks_atfork_child);
	/*
	 * One registration, not two: in a process with more than one thread
	 * each costs a synchronize_rcu() in the kernel
	 * (sync_runqueues_membarrier_state(), kernel/sched/membarrier.c), tens
	 * of milliseconds of an attach on a loaded machine.  The SYNC_CORE
	 * barrier the text code registers is a superset of PRIVATE_EXPEDITED's.
	 */
	usft_sync_init();
	if (usft_sync_core_registered())
		usft_membarrier_cmd = MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE;
	else if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0)
		usft_membarrier_cmd = MEMBARRIER_CMD_PRIVATE_EXPEDITED;
	usft_task_register();
}

static void tasks_membarrier(void)
{
	if (usft_membarrier_cmd)
		syscall(SYS_membarrier, usft_membarrier_cmd, 0, 0);
	else
		smp_mb();
}

/*
 * x86-64's split span (usft_task.span_*): inside while span_in != span_out.
 * span_out is read first: both only grow and span_in >= span_out always, so
 * equal values mean the thread was outside when span_in was read.
 */
static __always_inline bool span_inside(const struct usft_task *t)
{
	unsigned long out = READ_ONCE(t->span_out);

	smp_rmb();
	return READ_ONCE(t->span_in) != out;
}

static void backoff(unsigned int *n)
{
	if (++*n < 64) {
		sched_yield();
	} else {
		struct timespec ts = { 0, 50 * 1000 };

		nanosleep(&ts, NULL);
	}
}

void synchronize_rcu_tasks(void)
{
	struct usft_task *self = &usft_task, *t;
	unsigned int spins;
	int saved = errno;

	usft_count(nr_grace_periods);
	tasks_membarrier();
	pthread_mutex_lock(&usft_tasks_lock);
	tasks_drain_incoming();
	for_each_usft_task(t) {
		unsigned long gen0, sgen0;
		bool out_nest, out_span;

		if (t == self)
			continue;
		gen0 = READ_ONCE(t->gen);
		sgen0 = READ_ONCE(t->span_gen);
		smp_rmb();
		spins = 0;
		/* each kind of span: seen outside once, or its outermost level left */
		out_nest = out_span = false;
		for (;;) {
			if (!out_nest)
				out_nest = !READ_ONCE(t->nest) || READ_ONCE(t->gen) != gen0;
			if (!out_span)
				out_span = !span_inside(t) || READ_ONCE(t->span_gen) != sgen0;
			if (out_nest && out_span)
				break;
			backoff(&spins);
			if (spins == 20000)
				pr_warn("usft: grace period waits for a thread that stays inside a callback\n");
		}
	}
	pthread_mutex_unlock(&usft_tasks_lock);
	tasks_membarrier();
	errno = saved;
}

bool usft_tasks_in_original(unsigned long im)
{
	struct usft_task *t;
	bool busy = false;

	pthread_mutex_lock(&usft_tasks_lock);
	tasks_drain_incoming();
	for_each_usft_task(t) {
		unsigned long d;

		if (busy)
			break;
		d = READ_ONCE(t->orig_depth);
		if (d > USFT_ORIG_MAX)
			busy = true;	/* too deep to know: assume so */
		for (unsigned long k = 0; k < d && k < USFT_ORIG_MAX && !busy; k++)
			busy = READ_ONCE(t->orig_stack[k]) == im;
	}
	pthread_mutex_unlock(&usft_tasks_lock);
	return busy;
}

/* call_rcu_tasks(): queued, run after the next grace period. */
struct rcu_cb {
	struct rcu_cb *next;
	void (*fn)(void *);
	void *ptr;
};
static struct rcu_cb *rcu_pending;
static unsigned long rcu_nr_pending;
static pthread_mutex_t rcu_cb_lock = PTHREAD_MUTEX_INITIALIZER;

void usft_rcu_tasks_barrier(void)
{
	struct rcu_cb *list, *n;

	pthread_mutex_lock(&rcu_cb_lock);
	list = rcu_pending;
	rcu_pending = NULL;
	rcu_nr_pending = 0;
	pthread_mutex_unlock(&rcu_cb_lock);
	if (!list)
		return;
	synchronize_rcu_tasks();
	for (; list; list = n) {
		n = list->next;
		list->fn(list->ptr);
		free(list);
	}
}

void usft_call_rcu_tasks(void (*fn)(void *), void *ptr)
{
	struct rcu_cb *cb = malloc(sizeof(*cb));
	bool flush;

	if (!cb) {
		/* No memory for the callback: wait here instead. */
		synchronize_rcu_tasks();
		fn(ptr);
		return;
	}
	cb->fn = fn;
	cb->ptr = ptr;
	pthread_mutex_lock(&rcu_cb_lock);
	cb->next = rcu_pending;
	rcu_pending = cb;
	flush = ++rcu_nr_pending >= 256;
	pthread_mutex_unlock(&rcu_cb_lock);
	/* Batch: one grace period per 256 deferred frees, never one per free. */
	if (flush)
		usft_rcu_tasks_barrier();
}

/* internal.h says what this guards; the count is per thread, no atomics */
int usft_api_enter(void)
{
	struct usft_task *t = &usft_task;

	if (usft_span_inside())
		return -EDEADLK;
	if (t->api_depth && t->sig_depth != t->api_sig_depth)
		return -EDEADLK;
	if (!t->api_depth++)
		t->api_sig_depth = t->sig_depth;
	barrier();
	return 0;
}
