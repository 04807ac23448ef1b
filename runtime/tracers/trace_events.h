/* SPDX-License-Identifier: MIT */
/*
 * tracers/trace_events.h - trace events in the tracefs (kernel
 * kernel/trace/trace_events.c): the events a program defines with
 * <usft/trace_events.h>, enabled per trace array, their files under
 * events/, set_event, available_events, and the enable_event /
 * disable_event commands of set_ftrace_filter.
 *
 * Everything but the probe runs on the control thread, as trace_array.c.
 */
#ifndef USFT_TRACE_EVENTS_INTERNAL_H
#define USFT_TRACE_EVENTS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct trace_array;

/* find the events of the loaded objects; register the commands (once) */
void usft_trace_events_init(void);
/*
 * a file of @tr: "available_events", "set_event", "events", "events/..."
 * (@file as trace_array.c resolved it).  Return: 0, -ENOENT not an events
 * file, or -errno (@why said).
 */
int usft_trace_events_read(struct trace_array *tr, const char *file, FILE *f);
int usft_trace_events_write(struct trace_array *tr, const char *file, const char *v, size_t len,
			    bool append, char *why, size_t wlen);
/* the instance @tr goes away: its events off, its files freed */
void usft_trace_events_remove(struct trace_array *tr);
/*
 * the text of the event entry (@off, @len, @id) of @tr's buffer, without
 * the context columns ("sched_switch: prev_comm=..."); Return: false when
 * it was overwritten or its event is unknown
 */
bool usft_trace_event_format(struct trace_array *tr, uint64_t off, uint64_t len, uint64_t id,
			     char *buf, size_t size);

/* trace_array.c's side, for the probe (any thread, hot-path rules) */
bool usft_trace_array_event_ok(struct trace_array *tr, unsigned int *cpu, int *tid);
void usft_trace_array_event_commit(struct trace_array *tr, unsigned int cpu, uint64_t off,
				   uint64_t len, uint64_t id);
/* the kernel's tracing_log_err(): one entry of @tr's error_log */
void usft_trace_array_log_err(struct trace_array *tr, const char *loc, const char *cmd,
			      const char *err, int pos);

#endif /* USFT_TRACE_EVENTS_INTERNAL_H */
