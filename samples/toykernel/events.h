/* SPDX-License-Identifier: MIT */
/*
 * samples/toykernel/events.h - the kernel's trace events that toykernel
 * fires where the kernel does (include/trace/events/sched.h, signal.h):
 * each a record of the kernel's fields and the kernel's TP_printk() text,
 * defined with <usft/trace_events.h> in events.c.
 *
 *   sched:sched_switch         context_switch()
 *   sched:sched_wakeup_new     wake_up_new_task()
 *   sched:sched_process_fork   kernel_clone()
 *   sched:sched_process_exec   exec_binprm()
 *   sched:sched_process_exit   do_exit()
 *   sched:sched_process_free   delayed_put_task_struct()
 *   signal:signal_generate     __send_signal_locked()
 *
 * The trace_*() helpers are always inlined: nothing here is a function
 * of its own for the tracer to see.
 */
#ifndef TOYKERNEL_EVENTS_H
#define TOYKERNEL_EVENTS_H

#include <string.h>
#include <usft/trace_events.h>
#include "toykernel.h"

#define __event_inline static inline __attribute__((always_inline))
#define TOY_PRIO 120			/* nice 0: the kernel's default prio */
#define TASK_REPORT_MAX 0x100		/* prev_state: preempted while runnable ("R+") */
#define EXIT_ZOMBIE 0x20

struct sched_switch_rec {
	char prev_comm[TOY_COMM_LEN];
	int prev_pid;
	int prev_prio;
	long prev_state;
	char next_comm[TOY_COMM_LEN];
	int next_pid;
	int next_prio;
};

struct sched_wakeup_rec {
	char comm[TOY_COMM_LEN];
	int pid;
	int prio;
	int target_cpu;
};

struct sched_process_fork_rec {
	char parent_comm[TOY_COMM_LEN];
	int parent_pid;
	char child_comm[TOY_COMM_LEN];
	int child_pid;
};

struct sched_process_exec_rec {
	char filename[64];	/* kernel: __string(filename), a dynamic string */
	int pid;
	int old_pid;
};

struct sched_process_template_rec {
	char comm[TOY_COMM_LEN];
	int pid;
	int prio;
};

struct signal_generate_rec {
	int sig;
	int errno_;		/* the kernel's field is "errno" */
	int code;
	char comm[TOY_COMM_LEN];
	int pid;
	int group;
	int result;
};

USFT_DECLARE_TRACE_EVENT(sched, sched_switch);
USFT_DECLARE_TRACE_EVENT(sched, sched_wakeup_new);
USFT_DECLARE_TRACE_EVENT(sched, sched_process_fork);
USFT_DECLARE_TRACE_EVENT(sched, sched_process_exec);
USFT_DECLARE_TRACE_EVENT(sched, sched_process_exit);
USFT_DECLARE_TRACE_EVENT(sched, sched_process_free);
USFT_DECLARE_TRACE_EVENT(signal, signal_generate);

__event_inline void trace_sched_switch(bool preempt, struct task_struct *prev,
				       struct task_struct *next)
{
	if (usft_trace_event_enabled(sched, sched_switch)) {
		struct sched_switch_rec r = {
			.prev_pid = prev->pid, .prev_prio = TOY_PRIO,
			.prev_state = prev->state == TASK_DEAD ? EXIT_ZOMBIE :
				      preempt ? TASK_REPORT_MAX : 0,
			.next_pid = next->pid, .next_prio = TOY_PRIO,
		};

		memcpy(r.prev_comm, prev->comm, TOY_COMM_LEN);
		memcpy(r.next_comm, next->comm, TOY_COMM_LEN);
		usft_trace_event_fire(sched, sched_switch, &r);
	}
}

__event_inline void trace_sched_wakeup_new(struct task_struct *p, int cpu)
{
	if (usft_trace_event_enabled(sched, sched_wakeup_new)) {
		struct sched_wakeup_rec r = { .pid = p->pid, .prio = TOY_PRIO, .target_cpu = cpu };

		memcpy(r.comm, p->comm, TOY_COMM_LEN);
		usft_trace_event_fire(sched, sched_wakeup_new, &r);
	}
}

__event_inline void trace_sched_process_fork(struct task_struct *parent,
					     struct task_struct *child)
{
	if (usft_trace_event_enabled(sched, sched_process_fork)) {
		struct sched_process_fork_rec r = {
			.parent_pid = parent ? parent->pid : 0, .child_pid = child->pid,
		};

		if (parent)
			memcpy(r.parent_comm, parent->comm, TOY_COMM_LEN);
		memcpy(r.child_comm, child->comm, TOY_COMM_LEN);
		usft_trace_event_fire(sched, sched_process_fork, &r);
	}
}

__event_inline void trace_sched_process_exec(struct task_struct *p, int old_pid,
					     const char *filename)
{
	if (usft_trace_event_enabled(sched, sched_process_exec)) {
		struct sched_process_exec_rec r = { .pid = p->pid, .old_pid = old_pid };

		strncpy(r.filename, filename, sizeof(r.filename) - 1);
		usft_trace_event_fire(sched, sched_process_exec, &r);
	}
}

#define DEFINE_TRACE_TASK(event)							\
__event_inline void trace_##event(struct task_struct *p)				\
{											\
	if (usft_trace_event_enabled(sched, event)) {					\
		struct sched_process_template_rec r = { .pid = p->pid, .prio = TOY_PRIO };	\
											\
		memcpy(r.comm, p->comm, TOY_COMM_LEN);					\
		usft_trace_event_fire(sched, event, &r);				\
	}										\
}
DEFINE_TRACE_TASK(sched_process_exit)
DEFINE_TRACE_TASK(sched_process_free)

__event_inline void trace_signal_generate(int sig, int code, struct task_struct *t, int group,
					  int result)
{
	if (usft_trace_event_enabled(signal, signal_generate)) {
		struct signal_generate_rec r = {
			.sig = sig, .code = code, .pid = t->pid, .group = group, .result = result,
		};

		memcpy(r.comm, t->comm, TOY_COMM_LEN);
		usft_trace_event_fire(signal, signal_generate, &r);
	}
}

#endif
