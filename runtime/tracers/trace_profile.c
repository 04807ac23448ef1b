// SPDX-License-Identifier: MIT
/*
 * tracers/trace_profile.c - the function profiler (kernel
 * kernel/trace/ftrace.c "function profiler", trace_stat/function<cpu>):
 * hits, total time (children included, the kernel's graph-time) and the
 * sum of squared times per function.
 *
 * Each thread counts into the table of its ring slot (no atomics, no
 * allocation: the table is sized at start for twice the number of sites);
 * a signal handler that interrupts an update on the same thread is not
 * counted (prof_lost).  The writer folds the tables of exited threads into
 * a merged table and adds the live ones when it writes a snapshot.
 */
#include <stdlib.h>
#include <string.h>
#include "tracer.h"

static inline unsigned long prof_hash(unsigned long ip, unsigned long mask)
{
	return (unsigned long)((ip * 0x9e3779b97f4a7c15ULL) >> 20) & mask;
}

static int prof_entry(struct ftrace_graph_ent *trace, struct fgraph_ops *gops,
		      struct ftrace_regs *fregs)
{
	return __atomic_load_n(&usft_tracing_on, __ATOMIC_RELAXED);
}

static void prof_return(struct ftrace_graph_ret *trace, struct fgraph_ops *gops,
			struct ftrace_regs *fregs)
{
	struct usft_tbuf *b = usft_tbuf_get();
	struct usft_prof_ent *e;
	unsigned long h, n = 0;
	uint64_t d;

	if (unlikely(!b || !b->prof))
		return;
	if (unlikely(b->prof_busy)) {
		b->prof_lost++;
		return;
	}
	b->prof_busy = 1;
	rb_barrier();
	h = prof_hash(trace->func, b->prof_mask);
	for (;;) {
		e = &b->prof[h];
		if (likely(e->ip == trace->func))
			break;
		if (!e->ip) {
			e->ip = trace->func;
			break;
		}
		if (++n > b->prof_mask) {
			b->prof_lost++;
			goto out;
		}
		h = (h + 1) & b->prof_mask;
	}
	d = trace->rettime - trace->calltime;
	e->hits++;
	e->time += d;
	e->time_sq += (double)d * (double)d;
out:
	rb_barrier();
	b->prof_busy = 0;
}

/* ---- merged tables (writer side, S.lock held) -------------------------- */

struct prof_table {
	struct usft_prof_ent *ent;
	size_t cap, n;
};

static struct prof_table merged;

static struct usft_prof_ent *table_slot(struct prof_table *t, uint64_t ip)
{
	size_t i;

	if ((t->n + 1) * 2 > t->cap) {
		struct prof_table g = { .cap = t->cap ? t->cap * 2 : 1024 };

		g.ent = calloc(g.cap, sizeof(*g.ent));
		if (!g.ent)
			return NULL;
		for (size_t k = 0; k < t->cap; k++) {
			struct usft_prof_ent *o = &t->ent[k];

			if (o->ip) {
				size_t j = prof_hash(o->ip, g.cap - 1);

				while (g.ent[j].ip)
					j = (j + 1) & (g.cap - 1);
				g.ent[j] = *o;
				g.n++;
			}
		}
		free(t->ent);
		*t = g;
	}
	i = prof_hash(ip, t->cap - 1);
	while (t->ent[i].ip && t->ent[i].ip != ip)
		i = (i + 1) & (t->cap - 1);
	if (!t->ent[i].ip) {
		t->ent[i].ip = ip;
		t->n++;
	}
	return &t->ent[i];
}

static void table_add(struct prof_table *t, const struct usft_prof_ent *src, size_t cnt)
{
	for (size_t i = 0; i < cnt; i++) {
		struct usft_prof_ent *d;

		if (!src[i].ip || !src[i].hits)
			continue;
		d = table_slot(t, src[i].ip);
		if (!d)
			return;
		d->hits += src[i].hits;
		d->time += src[i].time;
		d->time_sq += src[i].time_sq;
	}
}

void usft_profile_merge_slot(struct usft_tbuf *b)
{
	table_add(&merged, b->prof, b->prof_mask + 1);
}

void usft_profile_snapshot(void (*fn)(const struct usft_prof_ent *e, void *arg), void *arg)
{
	struct prof_table t = { 0 };
	unsigned int n = usft_tbuf_pool_slots();

	table_add(&t, merged.ent, merged.cap);
	for (unsigned int i = 0; i < n; i++) {
		struct usft_tbuf *b = usft_tbuf_slot(i);

		if (__atomic_load_n(&b->state, __ATOMIC_ACQUIRE) == TBUF_LIVE && b->prof)
			table_add(&t, b->prof, b->prof_mask + 1);
	}
	for (size_t i = 0; i < t.cap; i++)
		if (t.ent[i].ip)
			fn(&t.ent[i], arg);
	free(t.ent);
}

void usft_profile_reset(void)
{
	free(merged.ent);
	memset(&merged, 0, sizeof(merged));
}

/* ---- the tracer -------------------------------------------------------- */

static struct fgraph_ops prof_ops = {
	.entryfunc = prof_entry,
	.retfunc = prof_return,
};
static bool prof_registered;

static int prof_init(const struct usft_trace_opts *o)
{
	int ret = usft_apply_filters(&prof_ops.ops, o);

	if (ret)
		return ret;
	ret = register_ftrace_graph(&prof_ops);
	prof_registered = !ret;
	return ret;
}

static void prof_reset(void)
{
	if (prof_registered)
		unregister_ftrace_graph(&prof_ops);
	prof_registered = false;
	ftrace_free_filter(&prof_ops.ops);
}

static void prof_refilter(void)
{
	if (usft_reapply_filters(&prof_ops.ops) && !prof_registered)
		prof_registered = !register_ftrace_graph(&prof_ops);
}

const struct usft_tracer usft_profile_tracer = {
	.name = "profile",
	.kind = USFT_TRACER_PROFILE,
	.init = prof_init,
	.reset = prof_reset,
	.refilter = prof_refilter,
};
