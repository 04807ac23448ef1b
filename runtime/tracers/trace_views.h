/* SPDX-License-Identifier: MIT */
/*
 * tracers/trace_views.h - the aggregated views of `usft report` (the
 * summary, the call graph below a function, folded stacks), `usft info`,
 * and the names they print (C++ demangling).
 *
 * The views consume the reader's events one at a time in file order (each
 * thread's events in the order it wrote them) and keep only per-function
 * counters, one open-frame stack per thread and one node per distinct call
 * path: their memory does not grow with the trace's length.
 */
#ifndef USFT_TRACE_VIEWS_H
#define USFT_TRACE_VIEWS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "trace_read.h"

enum usft_view_kind {
	USFT_VIEW_SUMMARY,	/* per function: total, self, calls, avg/min/max */
	USFT_VIEW_GRAPH,	/* the calls below @graph_func, merged by call path */
	USFT_VIEW_FOLDED,	/* "a;b;c self_ns" lines (flamegraph.pl, speedscope, inferno) */
};

struct usft_view_opts {
	enum usft_view_kind kind;
	const char *sort;		/* summary: comma list of keys (NULL: "total") */
	const char *tids, *pids;	/* comma lists of numbers (NULL: every one) */
	uint64_t thresh_ns;		/* -t: calls shorter than this are not shown */
	unsigned int max_depth;		/* -D: calls at this depth or deeper are not shown (0: none) */
	const char *graph_func;		/* USFT_VIEW_GRAPH: the function (a glob) */
	unsigned int flags;		/* enum usft_print_flags */
};

/*
 * usft_view_check() - the options are usable: the sort keys are known, the
 * tid and pid lists are numbers.  Return: NULL, or what is wrong (static text).
 */
const char *usft_view_check(const struct usft_view_opts *o);
/* Return: 0, -1 a write failed (errno), -EINVAL the trace cannot give this view (*why) */
int usft_print_view(FILE *out, struct usft_trace *t, const struct usft_view_opts *o,
		    const char **why);
/* keep only the events of the processes @pids and threads @tids (comma lists; NULL: all) */
void usft_trace_select(struct usft_trace *t, const char *pids, const char *tids);
/* `usft info`: what was traced, per process */
int usft_print_info(FILE *out, struct usft_trace *t, const char *path);

/*
 * trace_tracecmd.c: a trace-cmd file (trace.dat) that `trace-cmd report` and
 * KernelShark read: ftrace:function and ftrace:funcgraph_entry/exit events.
 * Return: 0, -1 a write failed (errno), -errno with *why set.
 */
int usft_write_tracecmd(FILE *out, struct usft_trace *t, const char **why);

/* core/filter.c: a C++ name demangled (malloc'd), NULL if it is none */
char *usft_demangle(const char *name, bool full);

#endif /* USFT_TRACE_VIEWS_H */
