// SPDX-License-Identifier: MIT
/*
 * arch/x86_64/ftrace.c - the x86-64 hooks of core/arch.h
 * (arch/x86/kernel/ftrace.c).
 *
 * Userspace difference: program text is spread over objects that can be
 * terabytes apart, beyond rel32.  Each object gets a near window of
 * trampoline memory holding its own copies of ftrace_caller and
 * ftrace_regs_caller (the analogue of arm64's per-module ftrace PLTs, but
 * full copies so there is no extra jump) and the per-ops trampolines its
 * sites use.  FTRACE_ADDR, FTRACE_REGS_ADDR and ops->trampoline are tokens
 * that resolve to the copy in the record's window.
 */
#include <stdlib.h>
#include <string.h>
#include "core/arch.h"
#include "core/ops_event.h"
#include "core/text.h"
#include "elf/dwarf.h"
#include "mem/execmem.h"
#include "asm/prefetch.h"
#include "insn.h"

extern const char ftrace_caller_data[], ftrace_caller_end[];
extern const char ftrace_regs_caller_data[], ftrace_regs_caller_end[];
extern const char ftrace_regs_caller_jmp[];
extern const char ftrace_caller_op_ptr[], ftrace_call[], ftrace_caller_marked[];
extern const char ftrace_caller_novec[], ftrace_caller_novec_data[], ftrace_caller_novec_end[];
extern const char ftrace_caller_novec_op_ptr[], ftrace_call_novec[];
extern const char ftrace_event_caller[], ftrace_event_caller_data[], ftrace_event_caller_end[];
extern const char ftrace_event_caller_prefetch[];
extern const char ftrace_regs_caller_op_ptr[], ftrace_regs_call[];
extern const char ftrace_graph_stub[], ftrace_graph_stub_data[], ftrace_graph_stub_end[];
extern const char ftrace_graph_stub_lea[];
extern const char ftrace_graph_jmp_caller[];

/* what the shared callers call (kernel: the patched call at ftrace_call) */
ftrace_func_t x86_ftrace_call_func = ftrace_stub;

/* data words at the end of each template, in order */
struct tramp_data {
	unsigned long tpoff;
	unsigned long regfn;
	unsigned long opp;
	unsigned long funcp;
	unsigned long opv;
	unsigned long funcv;
};

struct tramp_copy {
	struct usft_window *w;
	unsigned long addr;
	unsigned long ev;	/* its ftrace_event_caller in front, or 0 */
	unsigned long nv;	/* its ftrace_caller_novec twin, or 0 */
};

/* the data words of ftrace_event_caller (entry.S), in order */
struct event_data {
	unsigned long tpoff;
	unsigned long slowv;
	unsigned long funcw;
	unsigned long fastv;
	unsigned long on;
	unsigned long slot;
	unsigned long clock;
	unsigned long base;
	unsigned long w1;
};

/* the data words of a graph jmp stub (fgraph_entry.S: GS_*) */
struct graph_stub_data {
	unsigned long tpoff;
	unsigned long regfn;
	unsigned long caller;
	unsigned long ip;
	unsigned long ops;
	unsigned long func;
};

/* a site's graph jmp stub, kept until its ops' trampoline is freed */
struct graph_stub {
	struct graph_stub *next;
	unsigned long ip;
	unsigned long addr;
	struct usft_window *w;
};
#define GRAPH_STUB_BITS 8

#define MAX_COPIES 16
struct usft_ops_private {
	struct usft_ops_private *next;
	struct ftrace_ops *ops;
	bool regs;
	size_t size;
	unsigned int nr;
	struct tramp_copy copy[MAX_COPIES];
	struct graph_stub **stubs;	/* graph ops, graph_jmp=1: by site */
};
static struct usft_ops_private *tramps;

/* the templates of entry.S a copy is made from (0 and 1: as FTRACE_ADDR/REGS) */
enum { TMPL_CALLER, TMPL_REGS, TMPL_NOVEC };
static const struct tmpl {
	const char *base, *data, *end, *op_ptr, *call;
} tmpls[] = {
	[TMPL_CALLER] = { ftrace_caller, ftrace_caller_data, ftrace_caller_end,
			  ftrace_caller_op_ptr, ftrace_call },
	[TMPL_REGS] = { ftrace_regs_caller, ftrace_regs_caller_data, ftrace_regs_caller_end,
			ftrace_regs_caller_op_ptr, ftrace_regs_call },
	[TMPL_NOVEC] = { ftrace_caller_novec, ftrace_caller_novec_data, ftrace_caller_novec_end,
			 ftrace_caller_novec_op_ptr, ftrace_call_novec },
};

static size_t tmpl_size(int kind)
{
	return (size_t)(tmpls[kind].end - tmpls[kind].base);
}

static size_t tmpl_data_off(int kind)
{
	return (size_t)(tmpls[kind].data - tmpls[kind].base);
}

/*
 * Per-ops copies load the ops and the callback straight from their own
 * data words: re-point the two RIP-relative loads and drop the second
 * indirection (layout documented at LOAD_OP/CALL_FUNC in entry.S).  The
 * callback word changes while threads run the copy (re-registration, the
 * stub before a grace period): @twin set, the call loads it from the
 * copy's data twin (mem/execmem.h), where one store updates it.
 */
static int bake_loads(unsigned char *buf, int kind, bool twin)
{
	const struct tmpl *t = &tmpls[kind];
	unsigned char *op = buf + (t->op_ptr - t->base);
	unsigned char *call = buf + (t->call - t->base);
	int disp;

	if (memcmp(op, "\x48\x8b\x15", 3) || memcmp(op + 7, "\x48\x8b\x12", 3) ||
	    memcmp(call, "\x48\x8b\x05", 3) || memcmp(call + 7, "\xff\x10", 2))
		return -EINVAL;
	memcpy(&disp, op + 3, 4);
	disp += (int)(offsetof(struct tramp_data, opv) - offsetof(struct tramp_data, opp));
	memcpy(op + 3, &disp, 4);
	memcpy(op + 7, "\x0f\x1f\x00", 3);
	memcpy(&disp, call + 3, 4);
	disp += (int)(offsetof(struct tramp_data, funcv) - offsetof(struct tramp_data, funcp));
	if (twin)
		disp += (int)USFT_EXECMEM_TWIN;
	memcpy(call + 3, &disp, 4);
	memcpy(call + 7, "\xff\xd0", 2);
	return 0;
}

/* the callback word a per-ops copy at @addr calls through (in its twin) */
static unsigned long *copy_func_word(unsigned long addr, int kind)
{
	return (unsigned long *)(usft_execmem_twin(addr) + tmpl_data_off(kind) +
				 offsetof(struct tramp_data, funcv));
}

/* point every copy of @p at @func: one store each, no text write */
static void copies_set_func(struct usft_ops_private *p, unsigned long func)
{
	for (unsigned int i = 0; i < p->nr; i++) {
		__atomic_store_n(copy_func_word(p->copy[i].addr, p->regs), func, __ATOMIC_RELEASE);
		if (p->copy[i].nv)
			__atomic_store_n(copy_func_word(p->copy[i].nv, TMPL_NOVEC), func,
					 __ATOMIC_RELEASE);
	}
}

/*
 * Build a copy of a template in @w.  @ops NULL: a shared caller reading
 * function_trace_op / x86_ftrace_call_func; else a per-ops trampoline with
 * the ops and its callback baked in (kernel create_trampoline()).
 */
/*
 * @ops NULL: a shared caller.  Else a per-ops trampoline; with @site set,
 * a per-callsite copy whose "ops" is that struct ftrace_callsite and which
 * keeps the orig_ax test (a direct ops may share the site).
 */
static unsigned long make_copy_for(struct usft_window *w, int kind, struct ftrace_ops *ops,
				   struct ftrace_callsite *site)
{
	size_t size = tmpl_size(kind), doff = tmpl_data_off(kind);
	unsigned char *buf;
	struct tramp_data *d;
	unsigned long addr;
	int ret;

	addr = usft_execmem_alloc(w, size);
	if (!addr)
		return 0;
	buf = malloc(size);
	if (!buf)
		return 0;
	memcpy(buf, tmpls[kind].base, size);
	d = (struct tramp_data *)(buf + doff);
	d->tpoff = usft_task_tpoff();
	d->regfn = (unsigned long)usft_task_register;
	if (site) {
		d->opv = (unsigned long)site;
		d->funcv = (unsigned long)ftrace_callsite_func;
		d->opp = addr + doff + offsetof(struct tramp_data, opv);
		d->funcp = addr + doff + offsetof(struct tramp_data, funcv);
		/* a per-callsite copy's callback never changes: it stays in the copy */
		if (bake_loads(buf, kind, false)) {
			free(buf);
			return 0;
		}
	} else if (ops) {
		d->opv = (unsigned long)ops;
		d->funcv = 0;	/* unused: the call reads the twin's word */
		d->opp = addr + doff + offsetof(struct tramp_data, opv);
		d->funcp = 0;
		if (bake_loads(buf, kind, true)) {
			free(buf);
			return 0;
		}
		/* published by the batch's syncs, before any site calls the copy */
		__atomic_store_n(copy_func_word(addr, kind), (unsigned long)ftrace_ops_get_func(ops),
				 __ATOMIC_RELEASE);
		/* a per-ops trampoline never serves a direct ops: no orig_ax test */
		if (kind == TMPL_REGS) {
			unsigned char *jnz = buf + (ftrace_regs_caller_jmp - ftrace_regs_caller);

			if (jnz[0] != 0x75) {	/* the template must keep a 2-byte jnz */
				free(buf);
				return 0;
			}
			memcpy(jnz, "\x66\x90", 2);
		}
	} else {
		d->opp = (unsigned long)&function_trace_op;
		d->funcp = (unsigned long)&x86_ftrace_call_func;
	}
	/* per-site copies are created in pass 1 of a batch: its syncs cover them */
	ret = x86_text_copy(addr, buf, size, site == NULL);
	free(buf);
	if (ret) {
		usft_execmem_free(w, addr, size);
		return 0;
	}
	return addr;
}

static unsigned long make_copy(struct usft_window *w, int kind, struct ftrace_ops *ops)
{
	return make_copy_for(w, kind, ops, NULL);
}

static size_t event_size(void)
{
	return (size_t)(ftrace_event_caller_end - ftrace_event_caller);
}

/*
 * An ops that writes its own events (core/ops_event.h) and whose callback
 * is called as it is (no assist function in between): its description.
 */
static const struct ftrace_ops_event *event_of(const struct usft_ops_private *p)
{
	if (!usft_opts.event_tramp || p->regs || ftrace_ops_get_func(p->ops) != p->ops->func)
		return NULL;
	return ftrace_ops_event_of(p->ops);
}

/*
 * The ftrace_event_caller in front of @p's copy at @copy, in the same
 * window.  Return: its address, or 0 (none: the sites call the copy).
 */
static unsigned long make_event_copy(struct usft_window *w, const struct usft_ops_private *p,
				     unsigned long copy)
{
	const struct ftrace_ops_event *e = event_of(p);
	size_t size = event_size();
	struct event_data *d;
	unsigned char *buf;
	unsigned long addr;
	int ret;

	if (!e)
		return 0;
	/* the image first; the trampoline memory only once it is good */
	buf = malloc(size);
	if (!buf)
		return 0;
	memcpy(buf, ftrace_event_caller, size);
	/* prefetchw only where CPUID lists it (asm/prefetch.h) */
	if (!arch_prefetch_w_usable()) {
		unsigned char *pf = buf + (ftrace_event_caller_prefetch - ftrace_event_caller);

		if (memcmp(pf, "\x41\x0f\x0d", 3)) {	/* prefetchw (%r10,...) */
			free(buf);
			return 0;
		}
		memcpy(pf, X86_NOP5, 5);
	}
	d = (struct event_data *)(buf + (ftrace_event_caller_data - ftrace_event_caller));
	d->tpoff = usft_task_tpoff();
	d->slowv = copy + (unsigned long)(ftrace_caller_marked - ftrace_caller);
	d->funcw = (unsigned long)copy_func_word(copy, false);
	d->fastv = (unsigned long)p->ops->func;
	d->on = (unsigned long)e->on;
	d->slot = e->slot_tpoff;
	d->clock = (unsigned long)e->clock;
	d->base = (unsigned long)e->base;
	d->w1 = e->w1_bits;
	addr = usft_execmem_alloc(w, size);
	ret = addr ? x86_text_copy(addr, buf, size, true) : -ENOMEM;
	free(buf);
	if (ret) {
		if (addr)
			usft_execmem_free(w, addr, size);
		return 0;
	}
	usft_counters.nr_event_trampolines++;
	return addr;
}

/*
 * The object's table of functions that take no vector argument, once
 * (elf/dwarf.c: no_vector_args()), from its file only if that is still
 * the file its records were read from (usft_elf_same_file()); a GCC clone
 * (a '.' in its name: .isra, .constprop, .part) may have had its
 * arguments rewritten and is left out.  Sites are only looked up in it
 * afterwards, so each gets one answer for the object's lifetime.
 */
static void novec_read(struct usft_object *obj)
{
	size_t k = 0, cursor = 0;

	obj->novec_read = true;
	if (usft_dwarf_novec_table(obj->path, &obj->elf, &obj->novec, &obj->nr_novec)) {
		obj->nr_novec = 0;
		return;
	}
	for (size_t i = 0; i < obj->nr_novec; i++) {
		const struct usft_elf_sym *sym = usft_elf_find_sym_next(&obj->elf, obj->novec[i],
									&cursor);

		if (sym && sym->addr == obj->novec[i] && !strchr(sym->name, '.'))
			obj->novec[k++] = obj->novec[i];
	}
	obj->nr_novec = k;
}

/*
 * The function of the site at @ip takes no floating-point or vector
 * argument, so xmm0-7 hold nothing it reads: the psABI passes nothing else
 * in them, and -fpatchable-function-entry turns off GCC's -fipa-ra, so no
 * caller keeps a value in a register the ABI lets a callee clobber.
 * Under ftrace_lock (the update path).
 */
static bool site_novec(unsigned long ip)
{
	static const unsigned char endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
	struct usft_object *obj = usft_object_of(ip);
	unsigned long link;

	if (!obj)
		return false;
	if (!obj->novec_read)
		novec_read(obj);
	if (!obj->nr_novec)
		return false;
	link = ip - obj->bias;
	if (usft_dwarf_novec_lookup(obj->novec, obj->nr_novec, link, &obj->novec_cursor))
		return true;
	/* -fcf-protection: the site follows the function's endbr64 */
	return !memcmp((const void *)(ip - 4), endbr64, 4) &&
	       usft_dwarf_novec_lookup(obj->novec, obj->nr_novec, link - 4, &obj->novec_cursor);
}

static bool in_reach(unsigned long ip, unsigned long addr, size_t size)
{
	return x86_rel32_ok(ip, addr) && x86_rel32_ok(ip, addr + size);
}

/*
 * What a site in reach of copy @c calls: its event trampoline; else, for a
 * function that takes no vector argument, the copy that does not save
 * xmm0-7; else the copy.  The same answer every time for one site: the
 * call made and the call later removed must be the same bytes.
 */
static unsigned long copy_target(const struct tramp_copy *c, unsigned long ip)
{
	if (c->ev && in_reach(ip, c->ev, event_size()))
		return c->ev;
	if (c->nv && usft_opts.novec_tramp && in_reach(ip, c->nv, tmpl_size(TMPL_NOVEC)) &&
	    site_novec(ip))
		return c->nv;
	return c->addr;
}

/* copy @i of @p: the copy in @w at @t and what goes with it */
static void copy_init(struct usft_ops_private *p, unsigned int i, struct usft_window *w,
		      unsigned long t)
{
	p->copy[i].w = w;
	p->copy[i].addr = t;
	p->copy[i].ev = make_event_copy(w, p, t);
	/*
	 * Shared callers and regs copies keep their xmm saves; an event
	 * trampoline's sites call it, never the copy (its slow path enters
	 * the copy that saves them).
	 */
	p->copy[i].nv = !p->regs && !p->copy[i].ev && usft_opts.novec_tramp ?
			make_copy(w, TMPL_NOVEC, p->ops) : 0;
}

/*
 * Per-ops trampolines are ftrace's own code (the kernel's EXECMEM_FTRACE,
 * always in rel32 reach on x86-64): they are placed near the text whatever
 * tramp_placement says; that option is for user and BPF-like trampolines.
 */
static struct usft_window *window_for(unsigned long lo, unsigned long hi)
{
	return usft_window_near(lo, hi, ARCH_NEAR_REACH);
}

/* 0: ftrace_caller, 1: ftrace_regs_caller */
unsigned long arch_ftrace_make_caller(struct usft_window *w, int which)
{
	return make_copy(w, which, NULL);
}

void arch_ftrace_object_removed(struct usft_object *obj)
{
	free(obj->novec);
	obj->novec = NULL;
	obj->nr_novec = 0;
}

static struct usft_ops_private *find_tramp(unsigned long primary)
{
	for (struct usft_ops_private *p = tramps; p; p = p->next)
		if (p->nr && p->copy[0].addr == primary)
			return p;
	return NULL;
}

static size_t graph_stub_size(void)
{
	return (size_t)(ftrace_graph_stub_end - ftrace_graph_stub);
}

/* the stub's data words, in the twin of the stub at @addr */
static struct graph_stub_data *graph_stub_words(unsigned long addr)
{
	return (struct graph_stub_data *)(usft_execmem_twin(addr) +
					  (size_t)(ftrace_graph_stub_data - ftrace_graph_stub));
}

/* the word holding the callback in the stub at @addr */
static unsigned long graph_stub_func_word(unsigned long addr)
{
	return (unsigned long)&graph_stub_words(addr)->func;
}

/* point the stub's two RIP-relative references at its twin (fgraph_entry.S) */
static int graph_stub_to_twin(unsigned char *buf)
{
	unsigned char *refs[2] = { buf, buf + (ftrace_graph_stub_lea - ftrace_graph_stub) };

	for (int k = 0; k < 2; k++) {
		int disp;

		if (refs[k][0] != 0x4c || refs[k][1] != (k ? 0x8d : 0x8b) || refs[k][2] != 0x1d)
			return -EINVAL;
		memcpy(&disp, refs[k] + 3, 4);
		disp += (int)USFT_EXECMEM_TWIN;
		memcpy(refs[k] + 3, &disp, 4);
	}
	return 0;
}

/*
 * Graph jmp mode: a site whose only ops is a function graph ops (args
 * frame, no IPMODIFY) jumps to a stub of its own (fgraph_entry.S).
 */
static bool graph_jmp_wanted(const struct usft_ops_private *p)
{
	return usft_opts.graph_jmp && !p->regs &&
	       (p->ops->flags & FTRACE_OPS_FL_GRAPH) && !(p->ops->flags & FTRACE_OPS_FL_IPMODIFY);
}

/* @ip's stub of @p, made when @create; 0: none (the caller falls back to a call) */
static unsigned long graph_stub(struct usft_ops_private *p, unsigned long ip, bool create)
{
	size_t size = graph_stub_size();
	unsigned long key = ftrace_hash_key(ip, GRAPH_STUB_BITS), addr;
	struct graph_stub_data *d;
	struct usft_obj_callers *a;
	struct graph_stub *gs;
	unsigned char *buf;

	for (gs = p->stubs ? p->stubs[key] : NULL; gs; gs = gs->next)
		if (gs->ip == ip)
			return gs->addr;
	if (!create)
		return 0;
	a = usft_object_callers(ip);
	if (!a)
		return 0;
	if (!p->stubs) {
		p->stubs = calloc(1UL << GRAPH_STUB_BITS, sizeof(*p->stubs));
		if (!p->stubs)
			return 0;
	}
	gs = calloc(1, sizeof(*gs));
	buf = malloc(size);
	addr = gs && buf ? usft_execmem_alloc(a->w, size) : 0;
	if (!addr || !in_reach(ip, addr, size))
		goto fail;
	memcpy(buf, ftrace_graph_stub, size);
	if (graph_stub_to_twin(buf))
		goto fail;
	/* the words go to the twin; the batch's syncs publish them with the stub */
	d = graph_stub_words(addr);
	d->tpoff = usft_task_tpoff();
	d->regfn = (unsigned long)usft_task_register;
	d->caller = (unsigned long)ftrace_graph_jmp_caller;
	d->ip = ip;
	d->ops = (unsigned long)p->ops;
	__atomic_store_n(&d->func, (unsigned long)ftrace_ops_get_func(p->ops), __ATOMIC_RELEASE);
	/* made in pass 1 of a batch (or before a single poke): its syncs cover it */
	if (x86_text_copy(addr, buf, size, false))
		goto fail;
	free(buf);
	gs->ip = ip;
	gs->addr = addr;
	gs->w = a->w;
	gs->next = p->stubs[key];
	p->stubs[key] = gs;
	return addr;
fail:
	if (addr)
		usft_execmem_free(a->w, addr, size);
	free(buf);
	free(gs);
	return 0;
}

/* point the callback word of every stub of @p at @func: one store each, in the twins */
static void graph_stubs_set_func(struct usft_ops_private *p, unsigned long func)
{
	if (!p->stubs)
		return;
	for (unsigned long i = 0; i < (1UL << GRAPH_STUB_BITS); i++)
		for (struct graph_stub *gs = p->stubs[i]; gs; gs = gs->next)
			__atomic_store_n((unsigned long *)graph_stub_func_word(gs->addr), func,
					 __ATOMIC_RELEASE);
}

static void graph_stubs_free(struct usft_ops_private *p)
{
	if (!p->stubs)
		return;
	for (unsigned long i = 0; i < (1UL << GRAPH_STUB_BITS); i++)
		while (p->stubs[i]) {
			struct graph_stub *gs = p->stubs[i];

			p->stubs[i] = gs->next;
			usft_execmem_free(gs->w, gs->addr, graph_stub_size());
			free(gs);
		}
	free(p->stubs);
	p->stubs = NULL;
}

/*
 * Resolve @addr for the site at @ip.  Return: the real branch target, or 0
 * when no copy in reach exists (and @create is false or creation failed).
 * @jmp (may be NULL) is set when the site must jump there (a graph stub).
 */
static unsigned long resolve_branch(unsigned long ip, unsigned long addr, bool create, bool *jmp)
{
	struct usft_ops_private *p;
	struct usft_obj_callers *a;
	struct usft_object *obj;

	addr = ftrace_jmp_get(addr);
again:
	if (addr == FTRACE_CALLSITE_ADDR || addr == FTRACE_CALLSITE_REGS_ADDR) {
		int idx = addr == FTRACE_CALLSITE_REGS_ADDR;
		struct ftrace_callsite *cs = ftrace_callsite_get(ip);

		if (!cs)
			return 0;
		if (!cs->tramp[idx] && create) {
			a = usft_object_callers(ip);
			if (a)
				cs->tramp[idx] = make_copy_for(a->w, idx, NULL, cs);
		}
		return cs->tramp[idx];
	}
	if (addr != FTRACE_ADDR && addr != FTRACE_REGS_ADDR) {
		p = find_tramp(addr);
		if (!p) {
			/* a direct trampoline: straight if in reach, else via the regs caller */
			if (arch_ftrace_direct_in_reach(ip, addr))
				return addr;
			/* through the regs caller (per-callsite: the site's own copy) */
			if (usft_opts.per_callsite_ops) {
				addr = FTRACE_CALLSITE_REGS_ADDR;
				goto again;
			}
			addr = FTRACE_REGS_ADDR;
			goto caller;
		}
		if (graph_jmp_wanted(p)) {
			unsigned long t = graph_stub(p, ip, create);

			if (t) {
				if (jmp)
					*jmp = true;
				return t;
			}
		}
		for (unsigned int i = 0; i < p->nr; i++)
			if (in_reach(ip, p->copy[i].addr, p->size))
				return copy_target(&p->copy[i], ip);
		if (!create || p->nr == MAX_COPIES)
			return 0;
		obj = usft_object_of(ip);
		if (!obj)
			return 0;
		{
			struct usft_window *w = window_for(obj->text_lo, obj->text_hi);
			unsigned long t = w ? make_copy(w, p->regs, p->ops) : 0;

			if (!t || !x86_rel32_ok(ip, t))
				return 0;
			copy_init(p, p->nr, w, t);
			return copy_target(&p->copy[p->nr++], ip);
		}
	}
caller:
	a = usft_object_callers(ip);
	if (!a)
		return 0;
	return a->caller[addr != FTRACE_ADDR];
}

static unsigned long resolve(unsigned long ip, unsigned long addr, bool create)
{
	return resolve_branch(ip, addr, create, NULL);
}

bool arch_ftrace_direct_in_reach(unsigned long ip, unsigned long addr)
{
	addr = ftrace_jmp_get(addr);
	return usft_opts.direct_calls && x86_rel32_ok(ip, addr);
}

void arch_ftrace_set_direct_caller(struct ftrace_regs *fregs, unsigned long addr)
{
	arch_ftrace_regs(fregs)->regs.orig_ax = addr;
}

/* kernel ftrace_call_replace(): call, or jmp for a jmp-marked direct address */
static int call_replace(unsigned char *buf, unsigned long ip, unsigned long addr, bool create)
{
	bool stub = false;
	unsigned long target = resolve_branch(ip, addr, create, &stub);
	/* jmp straight into a direct trampoline or a graph stub; callers are called */
	bool jmp = stub || (ftrace_is_jmp(addr) && target == ftrace_jmp_get(addr));

	if (!target || !x86_encode_branch(buf, ip, target, jmp))
		return -ENOMEM;
	return 0;
}

int ftrace_dyn_arch_init(void)
{
	usft_sync_init();
	x86_early_nops_report();
	x86_poke_init();
	return 0;
}

unsigned long ftrace_call_adjust(unsigned long addr)
{
	return addr;
}

static int ftrace_verify_code(unsigned long ip, const unsigned char *old)
{
	if (memcmp((const void *)ip, old, MCOUNT_INSN_SIZE))
		return -EINVAL;
	return 0;
}

int ftrace_init_nop(struct dyn_ftrace *rec)
{
	const unsigned char *p = (const unsigned char *)rec->ip;
	static const unsigned char gcc[5] = { 0x90, 0x90, 0x90, 0x90, 0x90 };

	/* make sure the site's object has its callers before anything calls */
	if (!resolve(rec->ip, FTRACE_ADDR, true))
		return -ENOMEM;
	if (!memcmp(p, X86_NOP5, 5))
		return 0;
	if (!memcmp(p, gcc, 5))
		return x86_poke_queue(rec->ip, (const unsigned char *)X86_NOP5, 5, true);
	/* clang: one 5-byte "nopl disp8(%rax,%rax,1)" of any displacement */
	if (!memcmp(p, X86_NOP5, 4))
		return x86_poke_queue(rec->ip, (const unsigned char *)X86_NOP5, 5, false);
	ftrace_expected = X86_NOP5;
	return -EINVAL;
}

int ftrace_make_call(struct dyn_ftrace *rec, unsigned long addr)
{
	unsigned char buf[5];

	if (ftrace_verify_code(rec->ip, (const unsigned char *)X86_NOP5))
		return -EINVAL;
	if (call_replace(buf, rec->ip, addr, true))
		return -EINVAL;
	return x86_poke_queue(rec->ip, buf, 5, false);
}

int ftrace_make_nop(struct dyn_ftrace *rec, unsigned long addr)
{
	unsigned char old[5];

	if (call_replace(old, rec->ip, addr, false) || ftrace_verify_code(rec->ip, old))
		return -EINVAL;
	return x86_poke_queue(rec->ip, (const unsigned char *)X86_NOP5, 5, false);
}

int ftrace_modify_call(struct dyn_ftrace *rec, unsigned long old_addr, unsigned long addr)
{
	unsigned char old[5], buf[5];

	if (call_replace(old, rec->ip, old_addr, false) || ftrace_verify_code(rec->ip, old))
		return -EINVAL;
	if (call_replace(buf, rec->ip, addr, true))
		return -EINVAL;
	return x86_poke_queue(rec->ip, buf, 5, false);
}

/*
 * kernel x86 ftrace_replace_code()'s first pass: every site that will change
 * is checked against what its record says it is (nothing is written on any
 * mismatch), and the copy of its new target in reach of it is made; the
 * generic second pass then queues the new bytes, and one INT3 batch writes
 * them all.
 */
int arch_ftrace_replace_prepare(struct dyn_ftrace *rec, int update)
{
	static unsigned char old[5];
	unsigned char buf[5];

	if (update == FTRACE_UPDATE_MAKE_CALL)
		memcpy(old, X86_NOP5, 5);
	else if (call_replace(old, rec->ip, ftrace_get_addr_curr(rec), false))
		return -EINVAL;
	if (ftrace_verify_code(rec->ip, old)) {
		ftrace_expected = old;
		return -EINVAL;
	}
	if (update != FTRACE_UPDATE_MAKE_NOP &&
	    call_replace(buf, rec->ip, ftrace_get_addr_new(rec), true))
		return -ENOMEM;
	return 0;
}

int ftrace_update_ftrace_func(ftrace_func_t func)
{
	smp_store_release(&x86_ftrace_call_func, func);
	return 0;
}

int ftrace_arch_code_modify_prepare(void)
{
	return 0;
}

int ftrace_arch_code_modify_post_process(void)
{
	return x86_poke_flush();
}

/* kernel arch_ftrace_update_trampoline() */
void arch_ftrace_update_trampoline(struct ftrace_ops *ops)
{
	struct usft_ops_private *p;
	struct usft_object *obj;
	struct usft_window *w = NULL;
	unsigned long t;

	/*
	 * Ownership is ops->usft (runtime-owned pointer), not the flag bit:
	 * callers may rewrite ops->flags wholesale between registrations.
	 */
	p = ops->usft;
	if (p && p->ops == ops && p->regs != !!(ops->flags & FTRACE_OPS_FL_SAVE_REGS)) {
		/*
		 * A static ops kept its trampoline from a registration with the
		 * other SAVE_REGS setting (its attributes changed in between):
		 * unused since that unregister's grace period, so build anew.
		 */
		arch_ftrace_trampoline_free(ops);
		p = NULL;
	}
	if (p) {
		if (!find_tramp(p->nr ? p->copy[0].addr : 0) || p->ops != ops)
			return;
		ops->trampoline = p->copy[0].addr;
		ops->flags |= FTRACE_OPS_FL_ALLOC_TRAMP;
		/* re-registered static ops: re-point the callback in every copy */
		copies_set_func(p, (unsigned long)ftrace_ops_get_func(ops));
		graph_stubs_set_func(p, (unsigned long)ftrace_ops_get_func(ops));
		return;
	}
	if (ops->trampoline)
		return;		/* preset by the owner (direct ops) */
	if (!usft_opts.ops_trampolines || (ops->flags & FTRACE_OPS_FL_STUB))
		return;
	obj = usft_main_object();
	if (!obj)
		return;
	w = window_for(obj->text_lo, obj->text_hi);
	if (!w)
		return;
	p = calloc(1, sizeof(*p));
	if (!p)
		return;
	p->ops = ops;
	p->regs = ops->flags & FTRACE_OPS_FL_SAVE_REGS;
	p->size = tmpl_size(p->regs);
	t = make_copy(w, p->regs, ops);
	if (!t) {
		free(p);
		return;
	}
	copy_init(p, 0, w, t);
	p->nr = 1;
	p->next = tramps;
	tramps = p;
	ops->usft = p;
	ops->trampoline = t;
	ops->trampoline_size = p->size;
	ops->flags |= FTRACE_OPS_FL_ALLOC_TRAMP;
	usft_counters.nr_trampolines++;
}

/*
 * Userspace addition: before the grace period of an unregister, point the
 * callback word of every copy at ftrace_stub.  A thread preempted between
 * a site's call and the trampoline's "inside" mark is invisible to the
 * grace period; when it resumes it now calls the stub, never the callback
 * of an ops whose unregister already returned.
 */
void arch_ftrace_trampoline_quiesce(struct ftrace_ops *ops)
{
	struct usft_ops_private *p = ops->usft;

	if (!p || p->ops != ops)
		return;
	copies_set_func(p, (unsigned long)ftrace_stub);
	graph_stubs_set_func(p, (unsigned long)ftrace_stub);
}

void arch_ftrace_trampoline_free(struct ftrace_ops *ops)
{
	struct usft_ops_private *p = ops->usft, **pp;

	if (!p)
		return;
	for (pp = &tramps; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	for (unsigned int i = 0; i < p->nr; i++) {
		usft_execmem_free(p->copy[i].w, p->copy[i].addr, p->size);
		if (p->copy[i].nv)
			usft_execmem_free(p->copy[i].w, p->copy[i].nv, tmpl_size(TMPL_NOVEC));
		if (p->copy[i].ev) {
			usft_execmem_free(p->copy[i].w, p->copy[i].ev, event_size());
			usft_counters.nr_event_trampolines--;
		}
	}
	graph_stubs_free(p);
	free(p);
	ops->usft = NULL;
	ops->trampoline = 0;
	ops->trampoline_size = 0;
	ops->flags &= ~FTRACE_OPS_FL_ALLOC_TRAMP;
	usft_counters.nr_trampolines--;
}

int arch_ftrace_site_bytes(unsigned long ip, unsigned char *buf, size_t len)
{
	if (len > MCOUNT_INSN_SIZE)
		len = MCOUNT_INSN_SIZE;
	memcpy(buf, (const void *)ip, len);
	return (int)len;
}
