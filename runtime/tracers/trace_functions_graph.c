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
 * -N FUNC (kernel set_graph_notrace): FUNC and everything below it are not
 * recorded; the entry returns 1 with the thread's notrace mark set so that
 * FUNC's return clears it (kernel trace_graph_entry(), TRACE_GRAPH_NOTRACE).
 * An entry written at once that does not fit in the ring is not hooked,
 * so its return is not recorded either (kernel: __trace_graph_entry()); an
 * entry kept back (below) that later finds the ring full is counted lost
 * and its return shows without a duration.
 */
#include <errno.h>
#include "trace_args.h"
#include "trace_triggers.h"
#include "tracer.h"

static int graph_max_depth;
static bool graph_filter_on;
static bool graph_notrace_on;		/* -N */
static bool graph_args_on;		/* -A, -R or --funcgraph-retval */
static bool graph_depth_on;		/* -T FUNC@depth=N */
static bool graph_plain = true;		/* none of -g, -D, -A, -R: the callbacks' fast path */
/* depth + 1 of the -g function frame this thread is inside, 0: outside */
static __thread int graph_start __attribute__((tls_model("initial-exec")));
/* depth + 1 of the -N function frame this thread is inside, 0: outside */
static __thread int graph_nt_depth __attribute__((tls_model("initial-exec")));
/* inside a depth=N function: frames at depth >= this are not recorded (0: -D's bound) */
static __thread int graph_dlimit __attribute__((tls_model("initial-exec")));

/*
 * -T FUNC@depth=N (uftrace's depth trigger): FUNC is recorded with N - 1
 * levels below it whatever -D says, and the bound before it comes back at
 * its return: the old bound is kept in the frame's fgraph data.  A frame
 * that finds no room for it (deep recursion) keeps the bound it had.
 */
static __attribute__((noinline)) void graph_depth_enter(struct fgraph_ops *gops, int bound)
{
	int *save = fgraph_reserve_data(gops->idx, sizeof(int));

	if (save) {
		*save = graph_dlimit;
		graph_dlimit = bound;
	}
}

static __attribute__((noinline)) void graph_depth_leave(struct fgraph_ops *gops)
{
	int *save = fgraph_retrieve_data(gops->idx, NULL);

	if (save)
		graph_dlimit = *save;
}

/*
 * Entries are kept back one step (usft_tbuf.pend_*): the next entry writes
 * its parent's, the frame's own return writes entry and return as one LEAF
 * event, a quarter fewer bytes and one reservation for the commonest kind
 * of call.  A handler that interrupts these callbacks on the same thread
 * (nest > 1) writes its events at once; the report orders by time.
 */
/* the EV_DATA header words for @n payload words of @kind about @ip at @depth */
static inline void data_hdr(uint64_t *w, unsigned int n, unsigned int kind, unsigned long ip,
			    int depth)
{
	w[0] = n | ((uint64_t)kind << EV_DATA_KIND_SHIFT);
	w[1] = usft_ev_w1(ip, (unsigned int)depth, EV_DATA);
}

/*
 * An entry with -A values: written at once with its EV_DATA (not kept
 * back: a leaf of it is an entry and a return), its pending parent first.
 */
static __attribute__((noinline)) bool graph_entry_args(struct usft_tbuf *b, const struct args_ent *e,
			     struct ftrace_regs *fregs, uint64_t w0, uint64_t w1, int depth)
{
	uint64_t w[4 + USFT_ARGS_MAX_WORDS];
	unsigned int n = usft_args_encode(e, fregs, false, &w[4]);
	bool ok;

	w[0] = w0;
	w[1] = w1;
	data_hdr(&w[2], n, USFT_DATA_ARGS, w1 & EV_IP_MASK, depth);
	usft_tbuf_begin(b);
	if (likely(b->nest == 1) && b->pend_w1) {
		usft_tbuf_reserve(b, b->pend_w0, b->pend_w1, 0, 0, 2);
		b->pend_w1 = 0;
	}
	ok = usft_tbuf_reserve_n(b, w, 4 + n);
	usft_tbuf_end(b);
	return ok;
}

/*
 * A return with a value (-R, --funcgraph-retval): @ev holds the event
 * (@nev words: a LEAF or a RET), the EV_DATA goes right after it.
 */
static __attribute__((noinline)) void
graph_return_value(struct usft_tbuf *b, const struct args_ent *e, struct ftrace_regs *fregs,
		   const uint64_t *ev, unsigned int nev, unsigned long ip, int depth)
{
	uint64_t w[3 + 2 + USFT_ARGS_MAX_WORDS];
	unsigned int n;
	unsigned int kind = USFT_DATA_RETVAL;

	for (unsigned int i = 0; i < nev; i++)
		w[i] = ev[i];

	if (usft_args_ent_has_ret(e)) {
		n = usft_args_encode(e, fregs, true, &w[nev + 2]);
	} else {
		n = usft_args_encode_raw_ret(fregs, &w[nev + 2]);
		kind = USFT_DATA_RETVAL_RAW;
	}
	data_hdr(&w[nev], n, kind, ip, depth);
	usft_tbuf_reserve_n(b, w, nev + 2 + n);
}

static int graph_entry(struct ftrace_graph_ent *trace, struct fgraph_ops *gops,
		       struct ftrace_regs *fregs)
{
	struct usft_tbuf *b;
	uint64_t w0, w1;
	int depth = trace->depth, bound = 0;
	bool started = false, ok = true;

	if (unlikely(!__atomic_load_n(&usft_tracing_on, __ATOMIC_RELAXED)))
		return 0;
	if (unlikely(!graph_plain)) {
		if (graph_notrace_on) {
			if (graph_nt_depth)
				return 0;	/* below a -N function */
			if (usft_graph_notrace_match(trace->func)) {
				graph_nt_depth = trace->depth + 1;
				return 1;	/* its return ends the hole */
			}
		}
		if (graph_filter_on) {
			if (!graph_start) {
				if (!usft_graph_func_match(trace->func))
					return 0;
				graph_start = depth + 1;
				started = true;
			}
			depth -= graph_start - 1;
		}
		if (unlikely(graph_depth_on) && (bound = usft_graph_depth_match(trace->func)))
			bound += depth;
		else if (graph_dlimit ? depth >= graph_dlimit
				      : graph_max_depth && depth >= graph_max_depth)
			goto refuse_hooked;
	}
	b = usft_tbuf_get();
	if (unlikely(!b))
		goto refuse;
	w0 = usft_ev_w0(trace->calltime - usft_trace_base, usft_tbuf_cpu(b));
	w1 = usft_ev_w1(trace->func, (unsigned int)depth, EV_GRAPH_ENT);
	if (unlikely(!graph_plain) && graph_args_on) {
		const struct args_ent *e = usft_args_find(trace->func);

		if (usft_args_ent_has_args(e)) {
			ok = graph_entry_args(b, e, fregs, w0, w1, depth);
			goto done;
		}
	}
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
done:
	if (likely(ok)) {
		if (unlikely(bound))
			graph_depth_enter(gops, bound);
		return 1;
	}
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
	const struct args_ent *e = NULL;
	bool value = false;
	uint64_t w[3];

	if (unlikely(!graph_plain)) {
		if (unlikely(graph_nt_depth) && trace->depth + 1 == graph_nt_depth) {
			graph_nt_depth = 0;	/* the -N function's own return */
			return;
		}
		if (unlikely(graph_depth_on))
			graph_depth_leave(gops);
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
	/* an unwound frame returned nothing */
	if (unlikely(!graph_plain) && graph_args_on && !gone && fregs) {
		e = usft_args_find(trace->func);
		value = usft_args_ent_has_ret(e) || usft_args_all_retval;
	}
	usft_tbuf_begin(b);
	if (likely(b->nest == 1) && b->pend_w1) {
		uint64_t w1 = usft_ev_w1(trace->func, (unsigned int)depth, EV_GRAPH_ENT);

		if (b->pend_w1 == w1 &&
		    (b->pend_w0 & EV_TS_MASK) == ((trace->calltime - usft_trace_base) & EV_TS_MASK)) {
			/* our own entry: a leaf */
			b->pend_w1 = 0;
			w[0] = b->pend_w0;
			w[1] = usft_ev_w1(trace->func, (unsigned int)depth,
					  gone ? EV_GRAPH_LEAF_GONE : EV_GRAPH_LEAF);
			w[2] = rel & EV_TS_MASK;
			if (unlikely(value))
				graph_return_value(b, e, fregs, w, 3, trace->func, depth);
			else
				usft_tbuf_reserve(b, w[0], w[1], w[2], 0, 3);
			goto out;
		}
		usft_tbuf_reserve(b, b->pend_w0, b->pend_w1, 0, 0, 2);
		b->pend_w1 = 0;
	}
	w[0] = usft_ev_w0(rel, usft_tbuf_cpu(b));
	w[1] = usft_ev_w1(trace->func, (unsigned int)depth, gone ? EV_GRAPH_GONE : EV_GRAPH_RET);
	if (unlikely(value))
		graph_return_value(b, e, fregs, w, 2, trace->func, depth);
	else
		usft_tbuf_reserve(b, w[0], w[1], 0, 0, 2);
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
	if (o->graph_notrace && *o->graph_notrace) {
		graph_notrace_on = true;
		usft_resolve_graph_notrace(o->graph_notrace);
	}
	ret = usft_args_init(o);
	if (ret)
		return ret;
	graph_args_on = usft_args_any();
	graph_depth_on = o->triggers && usft_graph_depth_resolve(o->triggers) >= 0;
	graph_plain = !graph_filter_on && !graph_notrace_on && !graph_max_depth && !graph_args_on &&
		      !graph_depth_on;
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
	graph_notrace_on = false;
	graph_args_on = false;
	graph_depth_on = false;
	usft_graph_depth_free();
	usft_args_reset();
}

static void graph_refilter(void)
{
	bool any = usft_reapply_filters(&graph_ops.ops);

	if (graph_filter_on)
		usft_resolve_graph_funcs(NULL);
	if (graph_notrace_on)
		usft_resolve_graph_notrace(NULL);
	if (graph_depth_on)
		usft_graph_depth_resolve(NULL);
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
