// SPDX-License-Identifier: MIT
/*
 * rcu.c - read-copy-update, the shape of kernel/rcu/tree.c without its
 * grace-period machinery.  call_rcu() queues a callback on this CPU; each
 * tick rcu_sched_clock_irq() advances the CPU's callback segments
 * (next -> wait -> done), and when callbacks are done it raises
 * RCU_SOFTIRQ, whose handler rcu_core() runs them:
 *
 *   timer_interrupt() ... update_process_times()
 *     rcu_sched_clock_irq()            every tick
 *       raise_softirq(RCU_SOFTIRQ)
 *   irq_exit() ... __do_softirq()
 *     rcu_core()
 *       rcu_do_batch()
 *         delayed_put_task_struct()    the callback do_exit() queued
 *
 * A callback waits at least one whole tick: toykernel's only RCU users
 * free tasks that no CPU can reach any more, so that is enough here; the
 * kernel waits until every CPU has passed a quiescent state.
 */
#include "toykernel.h"

struct rcu_data {
	spinlock_t lock;
	struct rcu_head *next;	/* queued since the last tick */
	struct rcu_head *wait;	/* queued before it: done at the next tick */
	struct rcu_head *done;	/* ready: rcu_core() invokes them */
	unsigned long nr_invoked;
};

static struct rcu_data rcu_data[TOY_MAX_CPUS];
static _Thread_local int rcu_nesting;

static struct rcu_data *this_rcu_data(void)
{
	return &rcu_data[this_rq ? this_rq->cpu : 0];
}

__toy void rcu_read_lock(void)
{
	rcu_nesting++;
	barrier();
}

__toy void rcu_read_unlock(void)
{
	barrier();
	rcu_nesting--;
}

__toy void call_rcu(struct rcu_head *head, void (*func)(struct rcu_head *head))
{
	struct rcu_data *rdp = this_rcu_data();

	head->func = func;
	spin_lock(&rdp->lock);
	head->next = rdp->next;
	rdp->next = head;
	spin_unlock(&rdp->lock);
}

static void splice(struct rcu_head **to, struct rcu_head *list)
{
	while (list) {
		struct rcu_head *n = list->next;

		list->next = *to;
		*to = list;
		list = n;
	}
}

/* the tick's report: this CPU passed a quiescent state */
__toy void rcu_sched_clock_irq(void)
{
	struct rcu_data *rdp = this_rcu_data();
	bool ready;

	spin_lock(&rdp->lock);
	splice(&rdp->done, rdp->wait);
	rdp->wait = rdp->next;
	rdp->next = NULL;
	ready = rdp->done != NULL;
	spin_unlock(&rdp->lock);
	if (ready)
		raise_softirq(RCU_SOFTIRQ);
}

__toy static void rcu_do_batch(struct rcu_data *rdp)
{
	struct rcu_head *list;

	spin_lock(&rdp->lock);
	list = rdp->done;
	rdp->done = NULL;
	spin_unlock(&rdp->lock);
	while (list) {
		struct rcu_head *n = list->next;

		list->func(list);
		rdp->nr_invoked++;
		list = n;
	}
}

/* RCU_SOFTIRQ's handler */
__toy void rcu_core(void)
{
	rcu_do_batch(this_rcu_data());
	barrier();
}
