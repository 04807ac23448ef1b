// SPDX-License-Identifier: MIT
/*
 * events.c - the definitions of toykernel's trace events (events.h): the
 * kernel's fields, in the kernel's order, and its TP_printk() texts.
 */
#include "events.h"

#define R(type, f)	USFT_FIELD(struct type, int, f)
#define S(type, f)	USFT_FIELD_STRING(struct type, f)

static const struct usft_event_sym task_states[] = {
	{ 0, "R" }, { EXIT_ZOMBIE, "Z" }, { TASK_REPORT_MAX, "R+" }, { 0, NULL },
};

static const struct usft_event_field sched_switch_fields[] = {
	S(sched_switch_rec, prev_comm), R(sched_switch_rec, prev_pid),
	R(sched_switch_rec, prev_prio),
	USFT_FIELD_SYM(struct sched_switch_rec, long, prev_state, task_states),
	S(sched_switch_rec, next_comm), R(sched_switch_rec, next_pid),
	R(sched_switch_rec, next_prio),
};
USFT_TRACE_EVENT(sched, sched_switch, struct sched_switch_rec, sched_switch_fields,
		 "prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s ==> next_comm=%s "
		 "next_pid=%d next_prio=%d", "prev_comm", "prev_pid", "prev_prio", "prev_state",
		 "next_comm", "next_pid", "next_prio");

static const struct usft_event_field sched_wakeup_fields[] = {
	S(sched_wakeup_rec, comm), R(sched_wakeup_rec, pid), R(sched_wakeup_rec, prio),
	R(sched_wakeup_rec, target_cpu),
};
USFT_TRACE_EVENT(sched, sched_wakeup_new, struct sched_wakeup_rec, sched_wakeup_fields,
		 "comm=%s pid=%d prio=%d target_cpu=%03d", "comm", "pid", "prio", "target_cpu");

static const struct usft_event_field sched_process_fork_fields[] = {
	S(sched_process_fork_rec, parent_comm), R(sched_process_fork_rec, parent_pid),
	S(sched_process_fork_rec, child_comm), R(sched_process_fork_rec, child_pid),
};
USFT_TRACE_EVENT(sched, sched_process_fork, struct sched_process_fork_rec,
		 sched_process_fork_fields, "comm=%s pid=%d child_comm=%s child_pid=%d",
		 "parent_comm", "parent_pid", "child_comm", "child_pid");

static const struct usft_event_field sched_process_exec_fields[] = {
	S(sched_process_exec_rec, filename), R(sched_process_exec_rec, pid),
	R(sched_process_exec_rec, old_pid),
};
USFT_TRACE_EVENT(sched, sched_process_exec, struct sched_process_exec_rec,
		 sched_process_exec_fields, "filename=%s pid=%d old_pid=%d", "filename", "pid",
		 "old_pid");

static const struct usft_event_field sched_process_template_fields[] = {
	S(sched_process_template_rec, comm), R(sched_process_template_rec, pid),
	R(sched_process_template_rec, prio),
};
USFT_TRACE_EVENT(sched, sched_process_exit, struct sched_process_template_rec,
		 sched_process_template_fields, "comm=%s pid=%d prio=%d", "comm", "pid", "prio");
USFT_TRACE_EVENT(sched, sched_process_free, struct sched_process_template_rec,
		 sched_process_template_fields, "comm=%s pid=%d prio=%d", "comm", "pid", "prio");

static const struct usft_event_field signal_generate_fields[] = {
	R(signal_generate_rec, sig),
	{ "int", "errno", offsetof(struct signal_generate_rec, errno_), sizeof(int), 0, 1,
	  USFT_FILTER_NUMBER, NULL },
	R(signal_generate_rec, code), S(signal_generate_rec, comm), R(signal_generate_rec, pid),
	R(signal_generate_rec, group), R(signal_generate_rec, result),
};
USFT_TRACE_EVENT(signal, signal_generate, struct signal_generate_rec, signal_generate_fields,
		 "sig=%d errno=%d code=%d comm=%s pid=%d grp=%d res=%d", "sig", "errno", "code",
		 "comm", "pid", "group", "result");
