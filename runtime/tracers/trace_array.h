/* SPDX-License-Identifier: MIT */
/*
 * tracers/trace_array.h - the tracefs side of the control channel: trace
 * arrays (kernel struct trace_array: the top-level one and each
 * instances/NAME), each with its own function ops, filters, ring buffer and
 * tracer, and the files `usft mount` serves from them (docs/tracefs.md).
 *
 * Paths are tracefs-relative: "trace", "options/sym-offset",
 * "instances/foo/set_ftrace_filter", "trace_stat/function0".  Every call
 * comes from the control thread, one at a time.
 */
#ifndef USFT_TRACE_ARRAY_H
#define USFT_TRACE_ARRAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* reading @path: its text into @f; Return: 0 or -errno (@why said) */
int usft_tracefs_read(const char *path, FILE *f, char *why, size_t wlen);
/*
 * writing @val (@len bytes) to @path; @append: the file was opened with
 * O_APPEND or this is not the first write since it was opened with O_TRUNC
 * (list files add instead of replacing).  Return: 0 or -errno (@why said);
 * a refused write changes nothing.
 */
int usft_tracefs_write(const char *path, const char *val, size_t len, bool append,
		       char *why, size_t wlen);
/* O_TRUNC open of @path (trace, snapshot: clear; list files: nothing yet) */
int usft_tracefs_trunc(const char *path, char *why, size_t wlen);
/* trace_pipe of @path: consume at most @max bytes of formatted lines into @f */
int usft_tracefs_pipe(const char *path, size_t max, FILE *f, char *why, size_t wlen);
/* the same in two steps: the text of [*@start, *@end) without consuming it,
 * then consumed only if nothing was since (the tail still at @start) */
int usft_tracefs_pipe_peek(const char *path, size_t max, FILE *f, unsigned long *start,
			   unsigned long *end, char *why, size_t wlen);
bool usft_tracefs_pipe_take(const char *path, unsigned long start, unsigned long end);
/* instances/NAME */
int usft_tracefs_mkdir(const char *name, char *why, size_t wlen);
int usft_tracefs_rmdir(const char *name, char *why, size_t wlen);
/* DETACH: every array back to nop (probes, profiler off), the instances removed */
void usft_tracefs_reset(void);

/* the probe commands' view of an array (trace_record.c's usft_trace_array_ops) */
struct trace_array;
bool usft_trace_array_is_on(struct trace_array *tr);
void usft_trace_array_set_on(struct trace_array *tr, bool on);
void usft_trace_array_dump_stack(struct trace_array *tr, unsigned long ip, int skip);
/* __trace_puts() into @tr (NULL: the top level), any thread; Return: whether it took it */
bool usft_trace_array_puts(struct trace_array *tr, unsigned long ip, const char *str, size_t len);
/* a tracefs number write (blanks around it; no sign); Return: 0 or -EINVAL */
int usft_tracefs_parse_ulong(const char *v, size_t len, int base, unsigned long *out);
/* trace_print.c: __trace_puts() into @tr (NULL: every top level: the recording's, the tracefs's) */
bool usft_tracer_puts(struct trace_array *tr, unsigned long ip, const char *str, size_t len);

#endif /* USFT_TRACE_ARRAY_H */
