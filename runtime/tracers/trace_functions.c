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
#include "core/ops_event.h"
#include "core/trace_clock.h"	/* before tracer.h: compiler.h's likely() */
#include "ring_buffer.h"
#include "tracer.h"

/*
 * no silent fallback to clock_gettime() on an arch that has a counter
 * (inject/CMakeLists.txt defines USFT_ARCH_TRACE_CLOCK when it has one)
 */
#if defined(USFT_ARCH_TRACE_CLOCK) && !HAVE_ARCH_TRACE_CYCLES
#error "asm/trace_clock.h not found: the shim's include path lacks runtime/arch/<arch>"
#endif

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

/* ---- -g / -N: graph functions and graph notrace ----------------------- */

/*
 * The sites -g (kernel set_graph_function) or -N (set_graph_notrace)
 * selects, with the filter syntax, globs included; a '!' token removes: a
 * sorted array published for the entry callback.  A re-resolve (dlopen)
 * publishes a new array; the old ones are freed by usft_free_graph_funcs()
 * once the graph ops is unregistered.
 */
struct graph_set {
	struct graph_set *old;
	size_t n;
	unsigned long ips[];
};
struct graph_list {
	struct graph_set *set;
	char *names;
};
#define MAX_GRAPH_SITES 65536
static struct graph_list graph_fn, graph_nt;

static int cmp_ip(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

	return (x > y) - (x < y);
}

/* drop from @set the sites of @glob */
static size_t graph_set_remove(struct graph_set *set, size_t n, const char *glob)
{
	int r = usft_match_sites(glob, -1, NULL, 0);
	unsigned long *gone;
	size_t k = 0;

	if (r <= 0 || !(gone = malloc((size_t)r * sizeof(*gone))))
		return n;
	r = usft_match_sites(glob, -1, gone, (size_t)r);
	for (size_t i = 0; i < n; i++)
		if (r <= 0 || !bsearch(&set->ips[i], gone, (size_t)r, sizeof(*gone), cmp_ip))
			set->ips[k++] = set->ips[i];
	free(gone);
	return k;
}

/* Return: how many sites the names select (names matching nothing are skipped). */
static int graph_list_resolve(struct graph_list *l, const char *names)
{
	char *copy, *g, *save = NULL;
	struct graph_set *set;
	size_t n = 0;

	if (names && names != l->names) {
		free(l->names);
		l->names = strdup(names);
	}
	if (!l->names)
		return 0;
	set = malloc(sizeof(*set) + MAX_GRAPH_SITES * sizeof(set->ips[0]));
	if (!set)
		return 0;
	/* adds first, then removals, whatever their order (kernel: one hash) */
	for (int pass = 0; pass < 2; pass++) {
		if (!(copy = strdup(l->names)))
			break;
		for (g = strtok_r(copy, " \t\n,", &save); g; g = strtok_r(NULL, " \t\n,", &save)) {
			int r;

			if ((*g == '!') != pass)
				continue;
			if (pass) {
				n = graph_set_remove(set, n, g + 1);
				continue;
			}
			r = usft_match_sites(g, -1, set->ips + n, MAX_GRAPH_SITES - n);
			if (r > 0)
				n += (size_t)r < MAX_GRAPH_SITES - n ? (size_t)r : MAX_GRAPH_SITES - n;
		}
		free(copy);
		if (!pass)
			qsort(set->ips, n, sizeof(set->ips[0]), cmp_ip);
	}
	/* most -g sets are a few functions: give back the rest */
	{
		struct graph_set *fit = realloc(set, sizeof(*set) + n * sizeof(set->ips[0]));

		if (fit)
			set = fit;
	}
	set->n = n;
	set->old = l->set;
	__atomic_store_n(&l->set, set, __ATOMIC_RELEASE);
	return (int)n;
}

int usft_resolve_graph_funcs(const char *names)
{
	return graph_list_resolve(&graph_fn, names);
}

int usft_resolve_graph_notrace(const char *names)
{
	return graph_list_resolve(&graph_nt, names);
}

static void graph_list_free(struct graph_list *l)
{
	struct graph_set *set = l->set;

	__atomic_store_n(&l->set, NULL, __ATOMIC_RELEASE);
	while (set) {
		struct graph_set *o = set->old;

		free(set);
		set = o;
	}
}

/* after unregister_ftrace_graph(): no reader is left */
void usft_free_graph_funcs(void)
{
	graph_list_free(&graph_fn);
	graph_list_free(&graph_nt);
}

static inline bool graph_list_has(struct graph_list *l, unsigned long ip)
{
	const struct graph_set *set = __atomic_load_n(&l->set, __ATOMIC_ACQUIRE);

	return set && bsearch(&ip, set->ips, set->n, sizeof(ip), cmp_ip);
}

bool usft_graph_func_match(unsigned long ip)
{
	return graph_list_has(&graph_fn, ip);
}

bool usft_graph_notrace_match(unsigned long ip)
{
	return graph_list_has(&graph_nt, ip);
}

/* ---- the function tracer --------------------------------------------- */

/* usft_trace_clock()'s calibration, set before the ops is registered */
static const struct trace_clock_state *function_clock;

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
	/*
	 * usft_trace_clock() inline: no call through the PLT, and the
	 * counter's latency overlaps the reservation below
	 */
	ts = trace_clock_read(function_clock);
	usft_tbuf_write(b, usft_ev_w0(ts - usft_trace_base, usft_tbuf_cpu(b)),
			usft_ev_w1(ip, 0, EV_FUNC), parent_ip, 3);
}

static struct ftrace_ops function_ops = { .func = function_trace_call };
static bool function_registered;

/*
 * What function_trace_call() writes, for a per-ops trampoline that writes
 * it itself (core/ops_event.h; x86-64 ftrace_event_caller, option
 * event_tramp): the same three words from the same state.
 */
static struct ftrace_ops_event function_event = { .ops = &function_ops };

static void function_describe(void)
{
	function_event.on = &usft_tracing_on;
	function_event.slot_tpoff = (unsigned long)((char *)&usft_tbuf_self -
						    (char *)__builtin_thread_pointer());
	function_event.clock = function_clock;
	function_event.base = &usft_trace_base;
	function_event.w1_bits = usft_ev_w1(0, 0, EV_FUNC);
	ftrace_ops_set_event(&function_event);
}

static int function_init(const struct usft_trace_opts *o)
{
	int ret = usft_apply_filters(&function_ops, o);

	function_clock = usft_trace_clock_state();
	function_describe();
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
	/* a later session (attach) starts from no filter */
	ftrace_free_filter(&function_ops);
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
