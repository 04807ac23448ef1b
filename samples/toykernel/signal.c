// SPDX-License-Identifier: MIT
/*
 * signal.c - signals (kernel/signal.c, kernel/exit.c): a task that exits
 * tells its parent with SIGCHLD, and the signal is queued on the parent:
 *
 *   do_exit()
 *     exit_notify()
 *       do_notify_parent()
 *         __send_signal_locked()     signal:signal_generate
 *
 * The toy keeps one pending mask per parent; nothing delivers it (init
 * reaps nothing: its children's memory goes back through RCU).
 */
#include "events.h"
#include "toykernel.h"

#define CLD_EXITED 1		/* si_code of a SIGCHLD for an exit */
#define TRACE_SIGNAL_DELIVERED 0
#define TRACE_SIGNAL_ALREADY_PENDING 1

static atomic_ulong init_pending;	/* init's pending signals, a bit each */

__toy static int __send_signal_locked(int sig, int code, struct task_struct *t, int group)
{
	unsigned long bit = 1UL << (sig - 1);
	int result = atomic_fetch_or(&init_pending, bit) & bit ? TRACE_SIGNAL_ALREADY_PENDING :
			 TRACE_SIGNAL_DELIVERED;

	trace_signal_generate(sig, code, t, group, result);
	return 0;
}

__toy int do_notify_parent(struct task_struct *tsk, int sig)
{
	(void)tsk;
	return __send_signal_locked(sig, CLD_EXITED, init_task, 1);
}

__toy void exit_notify(struct task_struct *tsk)
{
	if (init_task && tsk != init_task)
		do_notify_parent(tsk, SIGCHLD);
	/* init takes the signal at once: the next exit finds it clear again */
	atomic_store(&init_pending, 0);
}
