// SPDX-License-Identifier: MIT
/*
 * sched.c - the scheduler (kernel/sched/core.c, fair.c, idle.c).  Each
 * CPU thread owns a run queue of toy tasks and runs them one tick at a
 * time; the fair class picks the task that has run least (the smallest
 * vruntime), as CFS does:
 *
 *   schedule()
 *     __schedule()
 *       raw_spin_lock()                the run queue's lock
 *       update_rq_clock()
 *         sched_clock()
 *       pick_next_task()
 *         pick_next_task_fair()
 *       context_switch()
 *         switch_to()
 *         finish_task_switch()         a dead task's last reference
 *       raw_spin_unlock()
 *
 * The tick, scheduler_tick() (sched_tick() since Linux 6.10), charges the
 * running task and asks for a reschedule when its slice is over.  Between
 * two ticks the current task makes a few system calls (run_task()), and
 * the CPU idles until the next tick in arch_cpu_idle().
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "events.h"
#include "toykernel.h"

#define SCHED_SLICE_TICKS 3
#define TASK_CALLS_PER_TICK 4

int nr_cpu_ids;
int toy_hz = 1000;
atomic_bool toy_stopping;
_Thread_local struct rq *this_rq;
_Thread_local struct task_struct *current;

static struct rq runqueues[TOY_MAX_CPUS];
static struct task_struct idle_tasks[TOY_MAX_CPUS];

struct rq *cpu_rq(int cpu)
{
	return &runqueues[cpu];
}

__toy static void update_rq_clock(struct rq *rq)
{
	rq->clock = sched_clock();
}

/* called with rq->lock held */
__toy static struct task_struct *pick_next_task_fair(struct rq *rq)
{
	struct task_struct *best = NULL;

	for (struct task_struct *p = rq->tasks; p; p = p->next)
		if (!best || p->vruntime < best->vruntime)
			best = p;
	return best;
}

__toy static struct task_struct *pick_next_task(struct rq *rq)
{
	struct task_struct *p = pick_next_task_fair(rq);

	return p ? p : rq->idle;	/* the idle class: swapper/N */
}

__toy static void switch_to(struct rq *rq, struct task_struct *next)
{
	rq->curr = next;
	current = next;
}

__toy static void put_task_struct(struct task_struct *p)
{
	free_task(p);
}

__toy static void delayed_put_task_struct(struct rcu_head *rhp)
{
	struct task_struct *p = (struct task_struct *)((char *)rhp - offsetof(struct task_struct, rcu));

	trace_sched_process_free(p);
	put_task_struct(p);
}

__toy static void finish_task_switch(struct task_struct *prev)
{
	/* other CPUs may still look at a dead task: free it after a grace period */
	if (prev->state == TASK_DEAD)
		call_rcu(&prev->rcu, delayed_put_task_struct);
}

__toy static void context_switch(struct rq *rq, bool preempt, struct task_struct *prev,
				 struct task_struct *next)
{
	trace_sched_switch(preempt, prev, next);
	switch_to(rq, next);
	rq->nr_switches++;
	finish_task_switch(prev);
}

__toy static void __schedule(void)
{
	struct rq *rq = this_rq;
	struct task_struct *prev = rq->curr, *next;
	bool preempt;

	raw_spin_lock(&rq->lock);
	preempt = rq->need_resched && prev->state != TASK_DEAD;
	rq->need_resched = false;
	update_rq_clock(rq);
	next = pick_next_task(rq);
	if (next != prev)
		context_switch(rq, preempt, prev, next);
	raw_spin_unlock(&rq->lock);
}

__toy void schedule(void)
{
	__schedule();
	barrier();
}

/* the idle task's way in: nothing to put back on the queue */
__toy void schedule_idle(void)
{
	__schedule();
	barrier();
}

/* preempt_enable() found a pending reschedule */
__toy void preempt_schedule(void)
{
	__schedule();
	barrier();
}

/* a task waiting for I/O (the toy file system's "disk") */
__toy void io_schedule(void)
{
	schedule();
	barrier();
}

/* sleep for a number of ticks: the CPU runs something else meanwhile */
__toy long schedule_timeout(long ticks)
{
	schedule();
	return ticks > 1 ? ticks - 1 : 0;
}

__toy static void resched_curr(struct rq *rq)
{
	rq->need_resched = true;
}

__toy static void task_tick_fair(struct rq *rq, struct task_struct *curr)
{
	curr->vruntime++;
	if (rq->nr_running > 1 && curr->vruntime % SCHED_SLICE_TICKS == 0)
		resched_curr(rq);
	else if (curr == rq->idle && rq->nr_running)
		resched_curr(rq);
}

/* peek at the other run queues without waiting for their locks */
__toy static void trigger_load_balance(struct rq *rq)
{
	struct rq *other = cpu_rq((rq->cpu + 1) % nr_cpu_ids);

	if (other != rq && spin_trylock(&other->lock)) {
		barrier();
		spin_unlock(&other->lock);
	}
}

/* Linux 6.10 renamed scheduler_tick() to sched_tick(): the old name is the entry here */
__toy void sched_tick(void)
{
	struct rq *rq = this_rq;

	raw_spin_lock(&rq->lock);
	update_rq_clock(rq);
	rq->ticks++;
	task_tick_fair(rq, rq->curr);
	raw_spin_unlock(&rq->lock);
	trigger_load_balance(rq);
}

__toy void scheduler_tick(void)
{
	sched_tick();
	barrier();
}

__toy static int select_task_rq(void)
{
	static atomic_uint next_cpu;

	return (int)(atomic_fetch_add(&next_cpu, 1) % (unsigned int)nr_cpu_ids);
}

__toy static void enqueue_task_fair(struct rq *rq, struct task_struct *p)
{
	/* start level with the queue's tasks, as place_entity() does */
	struct task_struct *min = pick_next_task_fair(rq);

	p->vruntime = min ? min->vruntime : 0;
	p->next = rq->tasks;
	rq->tasks = p;
	rq->nr_running++;
}

__toy static void dequeue_task_fair(struct rq *rq, struct task_struct *p)
{
	for (struct task_struct **pp = &rq->tasks; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			rq->nr_running--;
			return;
		}
	}
}

__toy static void check_preempt_curr(struct rq *rq)
{
	if (rq->curr == rq->idle)
		resched_curr(rq);
}

__toy void wake_up_new_task(struct task_struct *p)
{
	struct rq *rq = cpu_rq(select_task_rq());

	raw_spin_lock(&rq->lock);
	trace_sched_wakeup_new(p, rq->cpu);
	enqueue_task_fair(rq, p);
	check_preempt_curr(rq);
	raw_spin_unlock(&rq->lock);
}

/* the running task leaves for good: off the queue, then schedule() away */
__toy void do_exit(void)
{
	struct rq *rq = this_rq;
	struct task_struct *p = rq->curr;

	trace_sched_process_exit(p);
	exit_notify(p);
	raw_spin_lock(&rq->lock);
	dequeue_task_fair(rq, p);
	p->state = TASK_DEAD;
	raw_spin_unlock(&rq->lock);
	schedule();
}

static struct timespec next_tick;

/* wait for the next timer interrupt: the CPU "halts" in clock_nanosleep() */
__toy static void arch_cpu_idle(struct timespec *deadline)
{
	long period = 1000000000L / toy_hz;

	deadline->tv_nsec += period;
	if (deadline->tv_nsec >= 1000000000L) {
		deadline->tv_nsec -= 1000000000L;
		deadline->tv_sec++;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, deadline, NULL))
		;
}

/*
 * A CPU's life: run the current task for a while, wait for the tick, take
 * the timer interrupt, reschedule if the tick asked for it.
 */
__toy void cpu_startup_entry(int cpu)
{
	struct rq *rq = cpu_rq(cpu);
	struct timespec deadline = next_tick;

	this_rq = rq;
	current = rq->curr;
	while (!atomic_load(&toy_stopping)) {
		/* a tick's worth of work: a few system calls of whichever task is current */
		for (int i = 0; i < TASK_CALLS_PER_TICK && rq->curr != rq->idle; i++)
			run_task(rq->curr);
		arch_cpu_idle(&deadline);
		timer_interrupt();
		if (rq->need_resched)
			rq->curr == rq->idle ? schedule_idle() : schedule();
	}
}

void sched_init(int nr_cpus)
{
	nr_cpu_ids = nr_cpus;
	clock_gettime(CLOCK_MONOTONIC, &next_tick);
	for (int cpu = 0; cpu < nr_cpus; cpu++) {
		struct rq *rq = cpu_rq(cpu);
		struct task_struct *idle = &idle_tasks[cpu];

		snprintf(idle->comm, sizeof(idle->comm), "swapper/%u", (unsigned char)cpu);	/* cpu < TOY_MAX_CPUS */
		rq->cpu = cpu;
		rq->idle = rq->curr = idle;
	}
}
