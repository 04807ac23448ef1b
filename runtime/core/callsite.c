// SPDX-License-Identifier: MIT
/*
 * core/callsite.c - per-callsite ops (option per_callsite_ops): usft's own
 * feature, beyond the kernel (docs/per-callsite-ops.md).
 *
 * With per_callsite_ops=1 a site that is not served by a lone direct
 * trampoline or a per-ops trampoline calls its own copy of the caller, whose
 * "ops" is its struct ftrace_callsite: the callback walks only the ops that
 * select this site (computed here whenever the list or a hash changes),
 * so a call pays nothing for unrelated ops.  Same tests, order and
 * recursion protection as ftrace_ops_list_func().
 */
#include <stdlib.h>
#include "core/arch.h"

char ftrace_callsite_token[4] __attribute__((aligned(8)));	/* even addresses: bit 0 is the jmp bit */

#define CALLSITE_BITS 12
static struct ftrace_callsite *callsites[1 << CALLSITE_BITS];
static unsigned long nr_callsites, callsite_bytes;
/* a new callsite's ops, until its first rebuild (never freed) */
static struct list_snap empty_snap = { .nr = 0 };

struct ftrace_callsite *ftrace_callsite_get(unsigned long ip)
{
	unsigned long key = ftrace_hash_key(ip, CALLSITE_BITS);
	struct ftrace_callsite *cs;

	for (cs = callsites[key]; cs; cs = cs->hnext)
		if (cs->ip == ip)
			return cs;
	cs = calloc(1, sizeof(*cs));
	if (!cs)
		return NULL;
	cs->ip = ip;
	cs->snap = &empty_snap;
	cs->hnext = callsites[key];
	callsites[key] = cs;
	nr_callsites++;
	ftrace_callsite_rebuild(cs);
	return cs;
}

/* the ops that the list walk would call at @cs->ip, in list order */
void ftrace_callsite_rebuild(struct ftrace_callsite *cs)
{
	struct list_snap *snap, *old;
	struct ftrace_ops *op;
	unsigned int n = 0;

	for (op = ftrace_ops_list; op != &ftrace_list_end; op = op->next)
		if (!(op->flags & FTRACE_OPS_FL_STUB) && hash_contains_ip(cs->ip, op->func_hash))
			n++;
	snap = malloc(sizeof(*snap) + n * sizeof(snap->ent[0]));
	if (!snap) {
		/* as for the list: NULL means "walk the list", never stale */
		pr_warn("usft: out of memory rebuilding a callsite's ops array\n");
		old = cs->snap;
		smp_store_release(&cs->snap, NULL);
		if (old && old != &empty_snap) {
			callsite_bytes -= sizeof(*old) + old->nr * sizeof(old->ent[0]);
			usft_call_rcu_tasks(ftrace_free_snap, old);
		}
		return;
	}
	snap->nr = 0;
	for (op = ftrace_ops_list; op != &ftrace_list_end; op = op->next) {
		struct list_ent *e;

		if ((op->flags & FTRACE_OPS_FL_STUB) || !hash_contains_ip(cs->ip, op->func_hash))
			continue;
		e = &snap->ent[snap->nr++];
		e->filter = NULL;	/* selected already: no hash test at call time */
		e->filter_bloom = ~0UL;
		e->ntrace = NULL;
		e->filter_bits = e->ntrace_bits = 0;
		e->save_regs = ftrace_ops_wants_regs(op);
		e->op = op;
	}
	old = cs->snap;
	smp_store_release(&cs->snap, snap);
	callsite_bytes += sizeof(*snap) + n * sizeof(snap->ent[0]);
	if (old && old != &empty_snap) {
		callsite_bytes -= sizeof(*old) + old->nr * sizeof(old->ent[0]);
		usft_call_rcu_tasks(ftrace_free_snap, old);
	}
}

/* the object's text goes away: its callsite copies must not be reused */
void ftrace_callsite_release(unsigned long lo, unsigned long hi)
{
	for (unsigned long i = 0; i < (1UL << CALLSITE_BITS); i++)
		for (struct ftrace_callsite *cs = callsites[i]; cs; cs = cs->hnext)
			if (cs->ip >= lo && cs->ip < hi)
				cs->tramp[0] = cs->tramp[1] = 0;	/* copies stay mapped */
}

void ftrace_callsite_rebuild_all(void)
{
	for (unsigned long i = 0; i < (1UL << CALLSITE_BITS); i++)
		for (struct ftrace_callsite *cs = callsites[i]; cs; cs = cs->hnext)
			ftrace_callsite_rebuild(cs);
}

void ftrace_callsite_stats(unsigned long *nr, unsigned long *bytes)
{
	*nr = nr_callsites;
	*bytes = callsite_bytes + nr_callsites * sizeof(struct ftrace_callsite);
}

/* ftrace_callsite_func() - the per-callsite walk: only this site's ops */
void ftrace_callsite_func(unsigned long ip, unsigned long parent_ip,
			  struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct ftrace_callsite *cs = (struct ftrace_callsite *)op;

	/* the snapshot holds only the ops that select this site */
	list_snap_call(&cs->snap, false, ip, parent_ip, fregs);
}
