// SPDX-License-Identifier: MIT
/*
 * tracers/trace_functions_graph.c - the function_graph tracer (kernel
 * kernel/trace/trace_functions_graph.c): an fgraph_ops whose entry and
 * return callbacks write entry/return events with the depth; `usft report`
 * turns them into the call tree with durations.
 *
 * -g FUNC (kernel set_graph_function): only FUNC and what runs below it;
 * outside, the entry callback returns 0 so no return is hooked.
 * -D N (kernel max_graph_depth): frames at depth >= N are not recorded.
 * An entry written at once that does not fit in the ring is not hooked,
 * so its return is not recorded either (kernel: __trace_graph_entry()); an
 * entry kept back (below) that later finds the ring full is counted lost
 * and its return shows without a duration.
 */
#include <errno.h>
#include "tracer.h"

static int graph_max_depth;
static bool graph_filter_on;
static bool graph_plain = true;		/* neither -g nor -D: the callbacks' fast path */
/* depth + 1 of the -g function frame this thread is inside, 0: outside */
static __thread int graph_start __attribute__((tls_model("initial-exec")));

/*
 * Entries are kept back one step (usft_tbuf.pend_*): the next entry writes
 * its parent's, the frame's own return writes entry and return as one LEAF
 * event, a quarter fewer bytes and one reservation for the commonest kind
 * of call.  A handler that interrupts these callbacks on the same thread
 * (nest > 1) writes its events at once; the report orders by time.
 */
static int graph_entry(struct ftrace_graph_ent *trace, struct fgraph_ops *gops,
		       struct ftrace_regs *fregs)
{
	struct usft_tbuf *b;
	uint64_t w0, w1;
	int depth = trace->depth;
	bool started = false, ok = true;

	if (unlikely(!__atomic_load_n(&usft_tracing_on, __ATOMIC_RELAXED)))
		return 0;
	if (unlikely(!graph_plain)) {
		if (graph_filter_on) {
			if (!graph_start) {
				if (!usft_graph_func_match(trace->func))
					return 0;
				graph_start = depth + 1;
				started = true;
			}
			depth -= graph_start - 1;
		}
		if (graph_max_depth && depth >= graph_max_depth)
			return 0;
	}
	b = usft_tbuf_get();
	if (unlikely(!b))
		goto refuse;
	w0 = usft_ev_w0(trace->calltime - usft_trace_base, usft_tbuf_cpu(b));
	w1 = usft_ev_w1(trace->func, (unsigned int)depth, EV_GRAPH_ENT);
	usft_tbuf_begin(b);
	if (likely(b->nest == 1)) {
		if (b->pend_w1)	/* the pending one is our parent */
			usft_tbuf_reserve(b, b->pend_w0, b->pend_w1, 0, 0, 2);
		b->pend_w0 = w0;
		b->pend_w1 = w1;
	} else {
		ok = usft_tbuf_reserve(b, w0, w1, 0, 0, 2);
	}
	usft_tbuf_end(b);
	if (likely(ok))
		return 1;
	/* not hooked: its return is lost too (lost counts events) */
	b->lost++;
	goto refuse_hooked;
refuse:
	/* no ring: the same (usft's own calls, USFT_TBUF_SELF, are not counted) */
	if (usft_tbuf_self == USFT_TBUF_NONE)
		usft_tbuf_no_slot_event();
refuse_hooked:
	if (started)
		graph_start = 0;
	return 0;
}

static void graph_return(struct ftrace_graph_ret *trace, struct fgraph_ops *gops,
			 struct ftrace_regs *fregs)
{
	struct usft_tbuf *b;
	int depth = trace->depth;
	bool gone = trace->flags & FGRAPH_RET_UNWOUND;
	uint64_t rel = trace->rettime - usft_trace_base;

	if (unlikely(!graph_plain)) {
		if (graph_filter_on) {
			depth -= graph_start - 1;
			if (trace->depth + 1 == graph_start)
				graph_start = 0;
		}
		if (depth < 0)
			depth = 0;
	}
	if (unlikely(!__atomic_load_n(&usft_tracing_on, __ATOMIC_RELAXED)))
		return;
	b = usft_tbuf_get();
	if (unlikely(!b))
		return;
	usft_tbuf_begin(b);
	if (likely(b->nest == 1) && b->pend_w1) {
		uint64_t w1 = usft_ev_w1(trace->func, (unsigned int)depth, EV_GRAPH_ENT);

		if (b->pend_w1 == w1 &&
		    (b->pend_w0 & EV_TS_MASK) == ((trace->calltime - usft_trace_base) & EV_TS_MASK)) {
			/* our own entry: a leaf */
			b->pend_w1 = 0;
			usft_tbuf_reserve(b, b->pend_w0,
					  usft_ev_w1(trace->func, (unsigned int)depth,
						     gone ? EV_GRAPH_LEAF_GONE : EV_GRAPH_LEAF),
					  rel & EV_TS_MASK, 0, 3);
			goto out;
		}
		usft_tbuf_reserve(b, b->pend_w0, b->pend_w1, 0, 0, 2);
		b->pend_w1 = 0;
	}
	usft_tbuf_reserve(b, usft_ev_w0(rel, usft_tbuf_cpu(b)),
			  usft_ev_w1(trace->func, (unsigned int)depth,
				     gone ? EV_GRAPH_GONE : EV_GRAPH_RET), 0, 0, 2);
out:
	usft_tbuf_end(b);
}

static struct fgraph_ops graph_ops = {
	.entryfunc = graph_entry,
	.retfunc = graph_return,
};
static bool graph_registered;

static int graph_init(const struct usft_trace_opts *o)
{
	int ret;

	graph_max_depth = o->max_depth > 0 ? o->max_depth : 0;
	if (o->graph_funcs && *o->graph_funcs) {
		graph_filter_on = true;
		usft_resolve_graph_funcs(o->graph_funcs);
	}
	graph_plain = !graph_filter_on && !graph_max_depth;
	ret = usft_apply_filters(&graph_ops.ops, o);
	if (ret)
		return ret;
	ret = register_ftrace_graph(&graph_ops);
	graph_registered = !ret;
	return ret;
}

static void graph_reset(void)
{
	if (graph_registered)
		unregister_ftrace_graph(&graph_ops);
	graph_registered = false;
	usft_free_graph_funcs();
	ftrace_free_filter(&graph_ops.ops);
	graph_filter_on = false;
}

static void graph_refilter(void)
{
	bool any = usft_reapply_filters(&graph_ops.ops);

	if (graph_filter_on)
		usft_resolve_graph_funcs(NULL);
	if (any && !graph_registered)
		graph_registered = !register_ftrace_graph(&graph_ops);
}

const struct usft_tracer usft_graph_tracer = {
	.name = "function_graph",
	.kind = USFT_TRACER_GRAPH,
	.init = graph_init,
	.reset = graph_reset,
	.refilter = graph_refilter,
};
