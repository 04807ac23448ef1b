/* SPDX-License-Identifier: MIT */
/*
 * tracers/trace_stack.h - stack traces in the recording and the stack
 * tracer (trace_stack.c; kernel kernel/trace/trace_stack.c).
 */
#ifndef USFT_TRACE_STACK_H
#define USFT_TRACE_STACK_H

#include <stdbool.h>
#include <stdio.h>

/* the stacktrace command on the recording's top level: an EV_STACK event */
void usft_record_stack(unsigned long ip);

#endif /* USFT_TRACE_STACK_H */
