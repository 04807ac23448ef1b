// SPDX-License-Identifier: MIT
/*
 * kernel/sched.c - the toy kernel's scheduler: the functions kernel samples
 * attach to (schedule(), wake_up_process(), try_to_wake_up(), ...), built
 * with the patch flags so each has a site.  Their bodies are small and real:
 * a task sleeps in schedule_timeout() until its timeout or a
 * wake_up_process() of it, and schedule() counts the task's switches.
 * The glue they sleep on (a condition variable per task) is in module.c,
 * which has no sites.
 */
#include <usft/module.h>

#include "kernel.h"

/* The runqueue's bookkeeping: what pick_next_task() would look at. */
static noinline void update_curr(struct task_struct *p)
{
	usft_kernel_task(p)->nr_switches++;
}

static noinline void context_switch(struct task_struct *prev)
{
	update_curr(prev);
	usft_kernel_yield();
}

static noinline void __schedule(void)
{
	context_switch(current);
}

void schedule(void)
{
	__schedule();
}

long schedule_timeout(long timeout)
{
	long left;

	schedule();
	left = usft_kernel_sleep(current, timeout);
	__set_current_state(TASK_RUNNING);
	return left;
}

int try_to_wake_up(struct task_struct *p, unsigned int state, int wake_flags)
{
	(void)wake_flags;
	if (!(READ_ONCE(p->__state) & state))
		return 0;	/* running already: nothing to wake */
	return usft_kernel_wake(p);
}

int wake_up_process(struct task_struct *p)
{
	return try_to_wake_up(p, TASK_INTERRUPTIBLE | TASK_UNINTERRUPTIBLE, 0);
}

void cond_resched(void)
{
	schedule();
}
