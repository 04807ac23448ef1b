/* SPDX-License-Identifier: MIT */
/*
 * tracers/trace_stack.h - stack traces in the recording and the stack
 * tracer (trace_stack.c; kernel kernel/trace/trace_stack.c).
 */
#ifndef USFT_TRACE_STACK_H
#define USFT_TRACE_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* the stacktrace command on the recording's top level: an EV_STACK event */
void usft_record_stack(unsigned long ip);

/*
 * The stack tracer's tracefs files (top level): stack_trace, stack_max_size,
 * stack_trace_filter, stack_tracer_enabled (the kernel's sysctl
 * /proc/sys/kernel/stack_tracer_enabled).  Control thread.
 * Return: 0, -ENOENT (not one of them), or -errno with @why set.
 */
int usft_stack_tracer_read(const char *file, FILE *f);
int usft_stack_tracer_write(const char *file, const char *v, size_t len, bool append, char *why,
			    size_t wlen);
void usft_stack_tracer_reset(void);

/*
 * The stacks a tracefs trace array's TA_STACK entries name by number:
 * put() in a traced thread (hot-path rules): Return: the stack's number;
 * get() on the control thread, of the @n frames put() stored under @nr.
 * get() Return: @n, 0 when that stack was overwritten since.
 */
struct usft_stack_store;
struct usft_stack_store *usft_stack_store_new(void);
void usft_stack_store_free(struct usft_stack_store *s);
unsigned long usft_stack_store_put(struct usft_stack_store *s, const unsigned long *f,
				   unsigned int n);
unsigned int usft_stack_store_get(struct usft_stack_store *s, unsigned long nr, unsigned int n,
				  unsigned long *f);

#endif /* USFT_TRACE_STACK_H */
