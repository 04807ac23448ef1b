// SPDX-License-Identifier: MIT
/*
 * tracers/trace_functions.c - the function tracer (kernel
 * kernel/trace/trace_functions.c): one ftrace_ops whose callback writes
 * (timestamp, cpu, function, parent) into the calling thread's ring.
 *
 * Also the filter plumbing every tracer shares: -l/-n globs applied one by
 * one (a glob matching nothing is skipped, not fatal: the kernel's
 * set_ftrace_filter fails the whole write), re-applied after dlopen() so
 * functions of a new object join, and the -g function list.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <usft/usft.h>
#include "tracer.h"

/* ---- filters --------------------------------------------------------- */

static char *saved_filter, *saved_notrace;

static int apply_globs(struct ftrace_ops *ops, const char *list, bool is_notrace, int *matched)
{
	char *copy, *save = NULL;
	int ret = 0;

	*matched = 0;
	if (!list || !*list)
		return 0;
	copy = strdup(list);
	if (!copy)
		return -ENOMEM;
	for (char *g = strtok_r(copy, " \t\n,", &save); g; g = strtok_r(NULL, " \t\n,", &save)) {
		int r = is_notrace ? ftrace_set_notrace(ops, (unsigned char *)g, -1, 0)
				: ftrace_set_filter(ops, (unsigned char *)g, -1, 0);

		if (!r)
			(*matched)++;
		else if (r != -EINVAL && !ret)
			ret = r;
	}
	free(copy);
	return ret;
}

/*
 * Return: 0; -ENOENT when -l globs were given and none matched (nothing to
 * trace yet: registering with an empty filter would trace everything).
 */
int usft_apply_filters(struct ftrace_ops *ops, const struct usft_trace_opts *o)
{
	int matched, ret;

	free(saved_filter);
	free(saved_notrace);
	saved_filter = o->filter ? strdup(o->filter) : NULL;
	saved_notrace = o->notrace_list ? strdup(o->notrace_list) : NULL;
	ret = apply_globs(ops, o->filter, false, &matched);
	if (ret)
		return ret;
	if (o->filter && *o->filter && !matched)
		return -ENOENT;
	return apply_globs(ops, o->notrace_list, true, &matched);
}

/*
 * After dlopen(): the same globs again, appended.  Without -l the empty
 * filter already means "everything"; the no-op filter update makes the core
 * scan the new object now instead of at some later call.
 * Return through @any: whether the filter selects something.
 */
static void reapply(struct ftrace_ops *ops, bool *any)
{
	int matched = 0;

	if (saved_filter && *saved_filter) {
		apply_globs(ops, saved_filter, false, &matched);
		*any = *any || matched;
	} else {
		ftrace_set_filter_ips(ops, NULL, 0, 0, 0);
		*any = true;
	}
	apply_globs(ops, saved_notrace, true, &matched);
}

bool usft_reapply_filters(struct ftrace_ops *ops)
{
	bool any = false;

	reapply(ops, &any);
	return any;
}

/* ---- -g: graph functions --------------------------------------------- */

#define MAX_GRAPH_FUNCS 64
static unsigned long graph_funcs[MAX_GRAPH_FUNCS];
static unsigned int nr_graph_funcs;
static char *saved_graph_names;

/* Return: how many names resolved to a site. */
int usft_resolve_graph_funcs(const char *names)
{
	char *copy, *save = NULL;
	unsigned int n = 0;

	if (names && names != saved_graph_names) {
		free(saved_graph_names);
		saved_graph_names = strdup(names);
	}
	if (!saved_graph_names || !(copy = strdup(saved_graph_names)))
		return 0;
	for (char *g = strtok_r(copy, " \t\n,", &save); g && n < MAX_GRAPH_FUNCS;
	     g = strtok_r(NULL, " \t\n,", &save)) {
		unsigned long a = usft_lookup_name(g), site = a ? ftrace_location(a) : 0;

		if (site)
			__atomic_store_n(&graph_funcs[n++], site, __ATOMIC_RELAXED);
	}
	free(copy);
	__atomic_store_n(&nr_graph_funcs, n, __ATOMIC_RELEASE);
	return (int)n;
}

bool usft_graph_func_match(unsigned long ip)
{
	unsigned int n = __atomic_load_n(&nr_graph_funcs, __ATOMIC_ACQUIRE);

	for (unsigned int i = 0; i < n; i++)
		if (graph_funcs[i] == ip)
			return true;
	return false;
}

/* ---- the function tracer --------------------------------------------- */

static void function_trace_call(unsigned long ip, unsigned long parent_ip,
				struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct usft_tbuf *b;
	unsigned long long ts;

	if (unlikely(!__atomic_load_n(&usft_tracing_on, __ATOMIC_RELAXED)))
		return;
	b = usft_tbuf_get();
	if (unlikely(!b))
		return;
	ts = usft_trace_clock();
	usft_tbuf_write(b, usft_ev_w0(ts - usft_trace_base, usft_tbuf_cpu(b)),
			usft_ev_w1(ip, 0, EV_FUNC), parent_ip, 3);
}

static struct ftrace_ops function_ops = { .func = function_trace_call };
static bool function_registered;

static int function_init(const struct usft_trace_opts *o)
{
	int ret = usft_apply_filters(&function_ops, o);

	if (ret)
		return ret;	/* -ENOENT: not yet; refilter() retries after dlopen */
	ret = register_ftrace_function(&function_ops);
	function_registered = !ret;
	return ret;
}

static void function_reset(void)
{
	if (function_registered)
		unregister_ftrace_function(&function_ops);
	function_registered = false;
}

static void function_refilter(void)
{
	if (usft_reapply_filters(&function_ops) && !function_registered)
		function_registered = !register_ftrace_function(&function_ops);
}

const struct usft_tracer usft_function_tracer = {
	.name = "function",
	.kind = USFT_TRACER_FUNCTION,
	.init = function_init,
	.reset = function_reset,
	.refilter = function_refilter,
};
