/* SPDX-License-Identifier: MIT */
/*
 * core/ops_event.h - an ops whose callback only writes one 3-word event
 * (timestamp and CPU, ip and type, parent ip) into the calling thread's
 * ring: the function tracer's function_trace_call().
 *
 * Described with ftrace_ops_set_event() before it is registered, such an
 * ops gets a per-ops trampoline that writes the event itself, with no
 * frame and no call (x86-64: ftrace_event_caller in arch/x86_64/entry.S),
 * and enters the ops' ordinary trampoline, which calls the callback, on
 * every way the fast path does not take: a thread not yet registered or
 * with no ring of its own, an event nested in another (a signal handler),
 * a full ring, a clock the fast path does not read, the callback changed
 * (re-registration, the stub before a grace period).  What it writes is
 * what the callback would write, word for word.  Arches that have no such
 * trampoline (arm64) ignore the description.  docs/design.md, "The
 * function tracer's event trampoline".
 *
 * The ring slot is struct usft_tbuf (tracers/ring_buffer.h) and the clock
 * struct trace_clock_state (core/trace_clock.h); the assembly's offsets
 * of both are checked against them at build time.
 */
#ifndef USFT_CORE_OPS_EVENT_H
#define USFT_CORE_OPS_EVENT_H

#include <usft/ftrace.h>

struct ftrace_ops_event {
	struct ftrace_ops *ops;
	struct ftrace_ops_event *next;		/* core's list */
	const int *on;				/* 0: the callback returns at once */
	unsigned long slot_tpoff;		/* TLS offset of the thread's ring slot pointer */
	const void *clock;			/* struct trace_clock_state */
	const unsigned long long *base;		/* subtracted from the clock */
	unsigned long long w1_bits;		/* or-ed into the second word: the type */
};

/*
 * ftrace_ops_set_event() - describe @ev->ops's events (before registering
 * it; the description stays until the process ends and is read when a
 * trampoline is built).  The newest description of an ops is its own; one
 * already given is not added again (its fields may be refreshed in place).
 * Exported privately for the preload shim's tracers (libusft.map
 * USFT_PRIVATE).
 */
void ftrace_ops_set_event(struct ftrace_ops_event *ev);
/* the description of @ops, or NULL */
const struct ftrace_ops_event *ftrace_ops_event_of(const struct ftrace_ops *ops);

#endif /* USFT_CORE_OPS_EVENT_H */
