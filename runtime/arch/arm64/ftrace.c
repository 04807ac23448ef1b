// SPDX-License-Identifier: MIT
/*
 * arch/arm64/ftrace.c - the arm64 hooks of core/arch.h
 * (arch/arm64/kernel/ftrace.c, DYNAMIC_FTRACE_WITH_ARGS, WITH_CALL_OPS,
 * WITH_DIRECT_CALLS).
 *
 * Sites: -fpatchable-function-entry=2 (MOV X9, X30 ; BL) or, for CALL_OPS,
 * =4,2 with 8-byte aligned functions, whose two pre-function NOPs hold the
 * site's ops literal.  The layout is told per site by ftrace_call_adjust()
 * (an object may mix both), so the "CALL_OPS arch" is per site here:
 *
 *   site with a literal, option call_ops=1: every call to the caller goes to
 *     ftrace_caller_ops, which reads the literal: the unique ops when
 *     CALL_OPS_EN (callback called directly; a direct ops is branched to at
 *     once), else ftrace_list_ops (or, with per_callsite_ops, the site's own
 *     callsite ops), and ftrace_nop_ops while the site is a NOP;
 *   other sites: ftrace_caller with function_trace_op and the shared call
 *     function (the non-CALL_OPS kernel build).
 *
 * Userspace difference: text is spread over objects far beyond the ±128 MiB
 * of BL.  Each object gets a near window holding its own copies of both
 * callers (the kernel's per-module ftrace PLTs, but full copies), so
 * FTRACE_ADDR is a token resolved to the copy in reach of the record.  A
 * direct trampoline out of BL range is reached through the caller
 * (ftrace_find_callable_addr()).  There are no per-ops trampolines on arm64.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "core/arch.h"
#include "core/text.h"
#include "mem/execmem.h"
#include "insn.h"

_Static_assert(offsetof(struct ftrace_ops, func) == USFT_OPS_FUNC, "USFT_OPS_FUNC");
_Static_assert(offsetof(struct ftrace_ops, direct_call) == USFT_OPS_DIRECT_CALL,
	       "USFT_OPS_DIRECT_CALL");
_Static_assert(sizeof(struct __arch_ftrace_regs) == USFT_FREGS_SIZE, "USFT_FREGS_SIZE");
_Static_assert(offsetof(struct __arch_ftrace_regs, direct_tramp) == USFT_FREGS_DIRECT_TRAMP,
	       "USFT_FREGS_DIRECT_TRAMP");
_Static_assert(offsetof(struct __arch_ftrace_regs, pc) == USFT_FREGS_PC, "USFT_FREGS_PC");
_Static_assert(offsetof(struct __arch_ftrace_regs, fpr) == USFT_FREGS_Q0, "USFT_FREGS_Q0");
_Static_assert(USFT_TASK_NEST == 0 && USFT_TASK_GEN == 8 && USFT_TASK_STATE == 24,
	       "usft_task layout used by entry.S");

extern const char ftrace_caller_data[], ftrace_caller_end[];
extern const char ftrace_caller_ops[], ftrace_caller_ops_data[], ftrace_caller_ops_end[];

/* what the shared ftrace_caller copies call (kernel: the bl at ftrace_call) */
ftrace_func_t arm64_ftrace_call_func = ftrace_stub;

/* kernel ftrace_list_ops / ftrace_nop_ops: literal values of shared / off sites */
static struct ftrace_ops ftrace_list_ops = {
	.func = ftrace_ops_list_func,
	.flags = FTRACE_OPS_FL_STUB | FTRACE_OPS_FL_INITIALIZED,
};
static struct ftrace_ops ftrace_nop_ops = {
	.func = ftrace_stub,
	.flags = FTRACE_OPS_FL_STUB | FTRACE_OPS_FL_INITIALIZED,
};

/* data words at the end of ftrace_caller, in order */
struct caller_data {
	unsigned long tpoff;
	unsigned long regfn;
	unsigned long opp;
	unsigned long funcp;
	unsigned long opv;
	unsigned long funcv;
};

struct ops_caller_data {
	unsigned long tpoff;
	unsigned long regfn;
};

/* ---- sites with a CALL_OPS literal ------------------------------------ */

/* sorted ips (BL slots) of the sites compiled with =4,2 */
static unsigned long *lit_sites;
static size_t nr_lit, cap_lit;
static bool lit_sorted = true;

static int ulong_cmp(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

	return x < y ? -1 : x > y;
}

static void lit_add(unsigned long ip)
{
	if (nr_lit == cap_lit) {
		size_t cap = cap_lit ? cap_lit * 2 : 256;
		unsigned long *n = realloc(lit_sites, cap * sizeof(*n));

		if (!n)
			return;	/* the site is then treated as having no literal */
		lit_sites = n;
		cap_lit = cap;
	}
	if (nr_lit && ip < lit_sites[nr_lit - 1])
		lit_sorted = false;
	lit_sites[nr_lit++] = ip;
}

static bool lit_has(unsigned long ip)
{
	if (!lit_sorted) {
		qsort(lit_sites, nr_lit, sizeof(*lit_sites), ulong_cmp);
		lit_sorted = true;
	}
	return nr_lit && bsearch(&ip, lit_sites, nr_lit, sizeof(*lit_sites), ulong_cmp);
}

static void lit_remove_range(unsigned long lo, unsigned long hi)
{
	size_t w = 0;

	for (size_t i = 0; i < nr_lit; i++)
		if (lit_sites[i] < lo || lit_sites[i] >= hi)
			lit_sites[w++] = lit_sites[i];
	nr_lit = w;
}

/* the literal of the site at @ip: 8-byte aligned, 12 or 16 bytes before it */
static unsigned long lit_addr(unsigned long ip)
{
	return (ip - 12) & ~7UL;
}

/* does the site at @ip dispatch through its literal? */
static bool site_call_ops(unsigned long ip)
{
	return usft_opts.call_ops && lit_has(ip);
}

/* ---- caller copies ----------------------------------------------------- */

/* per-site copies written since the last sync */
static bool copies_unsynced;

static unsigned long make_copy(struct usft_window *w, bool ops_caller, struct ftrace_callsite *cs)
{
	const char *tmpl = ops_caller ? ftrace_caller_ops : ftrace_caller;
	size_t size = ops_caller ? (size_t)(ftrace_caller_ops_end - ftrace_caller_ops)
				 : (size_t)(ftrace_caller_end - ftrace_caller);
	size_t doff = ops_caller ? (size_t)(ftrace_caller_ops_data - ftrace_caller_ops)
				 : (size_t)(ftrace_caller_data - ftrace_caller);
	unsigned char *buf;
	unsigned long addr;
	int ret;

	addr = usft_execmem_alloc(w, size);
	if (!addr)
		return 0;
	buf = malloc(size);
	if (!buf) {
		usft_execmem_free(w, addr, size);
		return 0;
	}
	memcpy(buf, tmpl, size);
	if (ops_caller) {
		struct ops_caller_data *d = (struct ops_caller_data *)(buf + doff);

		d->tpoff = usft_task_tpoff();
		d->regfn = (unsigned long)usft_task_register;
	} else {
		struct caller_data *d = (struct caller_data *)(buf + doff);

		d->tpoff = usft_task_tpoff();
		d->regfn = (unsigned long)usft_task_register;
		if (cs) {
			/* per-callsite copy: its "ops" is the callsite */
			d->opv = (unsigned long)cs;
			d->funcv = (unsigned long)ftrace_callsite_func;
			d->opp = addr + doff + offsetof(struct caller_data, opv);
			d->funcp = addr + doff + offsetof(struct caller_data, funcv);
		} else {
			d->opp = (unsigned long)&function_trace_op;
			d->funcp = (unsigned long)&arm64_ftrace_call_func;
		}
	}
	/*
	 * Per-site copies are made by ftrace_replace_code()'s first pass,
	 * which syncs once for all of them before any BL reaches one.
	 */
	ret = arm64_text_copy(addr, buf, size, cs == NULL);
	free(buf);
	if (!ret && cs)
		copies_unsynced = true;
	if (ret) {
		usft_execmem_free(w, addr, size);
		return 0;
	}
	return addr;
}

/* 0: ftrace_caller, 1: ftrace_caller_ops */
unsigned long arch_ftrace_make_caller(struct usft_window *w, int which)
{
	return make_copy(w, which, NULL);
}

void arch_ftrace_object_removed(struct usft_object *obj)
{
	lit_remove_range(obj->text_lo, obj->text_hi);
}

static bool is_caller_token(unsigned long addr)
{
	return addr == FTRACE_ADDR || addr == FTRACE_REGS_ADDR;
}

static bool is_callsite_token(unsigned long addr)
{
	return addr == FTRACE_CALLSITE_ADDR || addr == FTRACE_CALLSITE_REGS_ADDR;
}

/*
 * Resolve @addr for the site at @ip (kernel ftrace_find_callable_addr()).
 * Return: the real BL target, or 0 when no copy in reach exists (and
 * @create is false or creation failed).
 */
static unsigned long resolve(unsigned long ip, unsigned long addr, bool create)
{
	struct usft_obj_callers *a;

	addr = ftrace_jmp_get(addr);	/* no WITH_JMP on arm64: always a call */
	if (!is_caller_token(addr) && !is_callsite_token(addr)) {
		/* a direct trampoline: straight if in reach, else via the caller */
		if (arch_ftrace_direct_in_reach(ip, addr))
			return addr;
		addr = usft_opts.per_callsite_ops ? FTRACE_CALLSITE_ADDR : FTRACE_ADDR;
	}
	a = usft_object_callers(ip);
	if (!a)
		return 0;
	if (site_call_ops(ip))
		return a->caller[1];	/* ftrace_caller_ops: the literal picks the ops */
	if (is_callsite_token(addr)) {
		struct ftrace_callsite *cs = ftrace_callsite_get(ip);

		if (!cs)
			return 0;
		if (!cs->tramp[0] && create)
			cs->tramp[0] = cs->tramp[1] = make_copy(a->w, false, cs);
		return cs->tramp[0];
	}
	return a->caller[0];
}

bool arch_ftrace_direct_in_reach(unsigned long ip, unsigned long addr)
{
	addr = ftrace_jmp_get(addr);
	return usft_opts.direct_calls && a64_in_branch_range(ip, addr);
}

void arch_ftrace_set_direct_caller(struct ftrace_regs *fregs, unsigned long addr)
{
	arch_ftrace_regs(fregs)->direct_tramp = ftrace_jmp_get(addr);
}

/* ---- per-callsite ops behind a literal --------------------------------- */

/*
 * With per_callsite_ops a CALL_OPS site that is not served by a unique ops
 * gets, instead of ftrace_list_ops, an ops of its own whose func walks the
 * site's ops array.  Kept in the callsite's tramp[1] slot (arch-owned);
 * never freed: a thread may have read the literal just before it changed.
 */
struct callsite_ops {
	struct ftrace_ops ops;
	struct ftrace_callsite *cs;
};

static void callsite_ops_func(unsigned long ip, unsigned long parent_ip,
			      struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct callsite_ops *c = (struct callsite_ops *)op;

	ftrace_callsite_func(ip, parent_ip, (struct ftrace_ops *)c->cs, fregs);
}

static struct ftrace_ops *callsite_ops_for(unsigned long ip)
{
	struct ftrace_callsite *cs = ftrace_callsite_get(ip);
	struct callsite_ops *c;

	if (!cs)
		return NULL;
	if (cs->tramp[1])
		return (struct ftrace_ops *)cs->tramp[1];
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->ops.func = callsite_ops_func;
	c->ops.flags = FTRACE_OPS_FL_STUB | FTRACE_OPS_FL_INITIALIZED;
	c->cs = cs;
	cs->tramp[1] = (unsigned long)c;
	return &c->ops;
}

/* ---- the literal (kernel ftrace_rec_update_ops()) ----------------------- */

static int ftrace_rec_set_ops(const struct dyn_ftrace *rec, const struct ftrace_ops *ops)
{
	return arm64_write_literal(lit_addr(rec->ip), (unsigned long)ops);
}

static int ftrace_rec_set_nop_ops(struct dyn_ftrace *rec)
{
	if (!site_call_ops(rec->ip))
		return 0;
	return ftrace_rec_set_ops(rec, &ftrace_nop_ops);
}

static int ftrace_rec_update_ops(struct dyn_ftrace *rec)
{
	struct ftrace_ops *ops = NULL;

	if (!site_call_ops(rec->ip))
		return 0;
	if (rec->flags & FTRACE_FL_CALL_OPS_EN) {
		ops = ftrace_find_unique_ops(rec);
		USFT_WARN_ON(!ops);
		/* an ops that needs the assist wrapper cannot be called directly */
		if (ops && ftrace_ops_get_func(ops) != ops->func)
			ops = NULL;
	}
	if (!ops && usft_opts.per_callsite_ops)
		ops = callsite_ops_for(rec->ip);
	if (!ops)
		ops = &ftrace_list_ops;
	return ftrace_rec_set_ops(rec, ops);
}

/* ---- hooks -------------------------------------------------------------- */

int ftrace_dyn_arch_init(void)
{
	/* no per-ops trampolines on arm64: a lone ops is served by the literal */
	usft_opts.ops_trampolines = 0;
	usft_sync_init();
	return 0;
}

static bool exec_range(unsigned long a, unsigned long len)
{
	struct usft_object *obj = usft_object_of(a);

	if (!obj || a + len > obj->text_hi)
		return false;
	for (unsigned int i = 0; i < obj->nr_segs; i++)
		if ((obj->segs[i].prot & PROT_EXEC) && a >= obj->segs[i].lo &&
		    a + len <= obj->segs[i].hi)
			return true;
	return false;
}

/*
 * kernel ftrace_call_adjust(): the table entry is the first patched NOP
 * (=2; after the BTI C if any) or the first pre-function NOP (=4,2).  The
 * layout is told apart by the function symbol: with =4,2 a function starts
 * exactly 8 bytes after the entry.  Objects without symbols fall back to
 * the byte pattern (8-aligned NOP NOP [BTI C] NOP NOP).
 */
unsigned long ftrace_call_adjust(unsigned long addr)
{
	struct usft_object *obj;
	unsigned long mov;
	bool call_ops = false;

	if (addr & 3)
		return 0;
	if (!exec_range(addr, 8))
		return 0;
	if (!(addr & 7) && exec_range(addr, 20) && a64_read(addr) == A64_NOP &&
	    a64_read(addr + 4) == A64_NOP) {
		const struct usft_elf_sym *sym = NULL;

		obj = usft_object_of(addr);
		if (obj && obj->elf.nr_syms)
			sym = usft_elf_find_sym(&obj->elf, addr + 8 - obj->bias);
		if (sym) {
			call_ops = sym->addr == addr + 8 - obj->bias;
		} else {
			uint32_t w2 = a64_read(addr + 8);
			unsigned long m = addr + (w2 == A64_BTI_C ? 12 : 8);

			call_ops = (w2 == A64_NOP || w2 == A64_BTI_C) && a64_read(m) == A64_NOP &&
				   a64_read(m + 4) == A64_NOP;
		}
	}
	if (!call_ops)
		return addr + AARCH64_INSN_SIZE;
	mov = addr + 8;
	if (a64_read(mov) == A64_BTI_C)
		mov += AARCH64_INSN_SIZE;
	lit_add(mov + AARCH64_INSN_SIZE);
	return mov + AARCH64_INSN_SIZE;
}

static const uint32_t expected_nop = A64_NOP;
static const uint32_t expected_mov = A64_MOV_X9_X30;
static uint32_t expected_insn;

/*
 * MOV X9, X30 conversions queued by ftrace_init_nop() and made by
 * ftrace_arch_code_modify_post_process(): NOP -> MOV is not a pair the
 * architecture lets another thread execute while it changes (only B, BL,
 * BRK, NOP, ISB, SVC, HVC and SMC are), so with other threads alive the
 * writes happen while they wait in a signal handler (usft_stop_machine(),
 * the kernel's stop_machine() for text).  Their pages are opened when the
 * conversion is queued: nothing allocates while the other threads are stopped.
 */
static unsigned long *mov_queue;
static size_t mov_nr, mov_cap;

static int queue_mov(unsigned long pc)
{
	if (mov_nr == mov_cap) {
		size_t cap = mov_cap ? mov_cap * 2 : 256;
		unsigned long *q = realloc(mov_queue, cap * sizeof(*q));

		if (!q)
			return -ENOMEM;
		mov_queue = q;
		mov_cap = cap;
	}
	if (usft_text_open(pc, AARCH64_INSN_SIZE))
		return -EPERM;
	mov_queue[mov_nr++] = pc;
	return 0;
}

static int convert_movs(void *arg)
{
	int ret = 0;

	(void)arg;
	for (size_t i = 0; i < mov_nr; i++) {
		int r = arm64_patch_insn(mov_queue[i], A64_NOP, A64_MOV_X9_X30);

		if (r && !ret)
			ret = r;
	}
	return ret;
}

/*
 * A thread the stop could not hold (awake with the rendezvous signal
 * blocked, held by a debugger, not scheduled within 2 s) could run a site
 * while its NOP changes: nothing is written and the conversion returns
 * -EBUSY; the object keeps its NOPs until a later call can stop every
 * thread (ftrace_convert_nops()).
 */
static int flush_movs(void)
{
	static bool said;
	int ret = 0, left = 0;

	if (!mov_nr)
		return 0;
	if (usft_nr_threads() <= 1 || (left = usft_stop_machine(convert_movs, NULL, &ret)) < 0)
		ret = convert_movs(NULL);
	if (ret == -EBUSY) {
		usft_count(nr_nop_conversions_refused);
		usft_log(said ? USFT_LOG_DEBUG : USFT_LOG_ERR,
			 "usft: %d thread(s) could not be stopped (awake with the rendezvous "
			 "signal blocked, held by a debugger, or not scheduled within 2 s) for "
			 "the first NOPs of a loaded object to become MOV X9, X30, which no "
			 "thread may run while it changes: nothing is converted and the calls "
			 "that would patch return EBUSY until a later call can stop every thread\n",
			 left);
		said = true;
	}
	mov_nr = 0;
	return ret;
}

/*
 * kernel ftrace_init_nop(): MOV X9, X30 over the first NOP, once (queued,
 * see above), and with CALL_OPS the literal pointed at ftrace_nop_ops.
 */
int ftrace_init_nop(struct dyn_ftrace *rec)
{
	unsigned long pc = rec->ip, mov = pc - AARCH64_INSN_SIZE;
	uint32_t m;
	int ret;

	/* make sure the site's object has its callers before anything calls */
	if (!resolve(pc, FTRACE_ADDR, true))
		return -ENOMEM;
	if (a64_read(pc) != A64_NOP) {
		ftrace_expected = &expected_nop;
		return -EINVAL;
	}
	m = a64_read(mov);
	if (m != A64_NOP && m != A64_MOV_X9_X30) {
		ftrace_expected = &expected_mov;
		return -EINVAL;
	}
	ftrace_expected = NULL;
	ret = ftrace_rec_set_nop_ops(rec);
	if (!ret && m == A64_NOP)
		ret = queue_mov(mov);
	return ret;
}

/* kernel ftrace_modify_code(): compare with @old, then write @new */
static int modify_code(unsigned long pc, uint32_t old, uint32_t new)
{
	int ret;

	if (a64_read(pc) != old) {
		expected_insn = old;
		ftrace_expected = &expected_insn;
		return -EINVAL;
	}
	ret = arm64_patch_insn(pc, old, new);
	if (ret == -EINVAL) {
		expected_insn = old;
		ftrace_expected = &expected_insn;
	}
	return ret;
}

static int bl_to(unsigned long pc, unsigned long addr, bool create, uint32_t *insn)
{
	unsigned long target = resolve(pc, addr, create);

	if (!target || !a64_in_branch_range(pc, target))
		return -EINVAL;
	/* a copy made outside ftrace_replace_code()'s first pass */
	if (copies_unsynced) {
		usft_sync_core();
		copies_unsynced = false;
	}
	*insn = a64_branch(pc, target, true);
	return 0;
}

/*
 * The BL to @addr that @pc must hold now, in *@insn.  Return: 0, or
 * -EINVAL with ftrace_expected saying what was expected there.
 */
static int expect_bl(unsigned long pc, unsigned long addr, uint32_t *insn)
{
	if (bl_to(pc, addr, false, insn))
		return -EINVAL;
	if (a64_read(pc) != *insn) {
		expected_insn = *insn;
		ftrace_expected = &expected_insn;
		return -EINVAL;
	}
	return 0;
}

/*
 * @old at the site becomes the BL to @addr: the literal first, which the
 * site then reads, then the BL (even when the target is unchanged).
 */
static int write_bl(struct dyn_ftrace *rec, uint32_t old, unsigned long addr)
{
	uint32_t new;
	int ret;

	if (bl_to(rec->ip, addr, true, &new))
		return -EINVAL;
	ret = ftrace_rec_update_ops(rec);
	if (ret)
		return ret;
	return modify_code(rec->ip, old, new);
}

int ftrace_make_call(struct dyn_ftrace *rec, unsigned long addr)
{
	if (a64_read(rec->ip) != A64_NOP) {
		ftrace_expected = &expected_nop;
		return -EINVAL;
	}
	return write_bl(rec, A64_NOP, addr);
}

int ftrace_make_nop(struct dyn_ftrace *rec, unsigned long addr)
{
	uint32_t old;
	int ret;

	ret = expect_bl(rec->ip, addr, &old);
	if (ret)
		return ret;
	/* a thread already past the BL then runs a harmless nop callback */
	ret = ftrace_rec_set_nop_ops(rec);
	if (ret)
		return ret;
	return modify_code(rec->ip, old, A64_NOP);
}

int ftrace_modify_call(struct dyn_ftrace *rec, unsigned long old_addr, unsigned long addr)
{
	uint32_t old;
	int ret = expect_bl(rec->ip, old_addr, &old);

	return ret ? ret : write_bl(rec, old, addr);
}

/*
 * First pass of ftrace_replace_code(): the per-site caller copies the new
 * targets need (per_callsite_ops), all made before the first BL is written;
 * the first bl_to() of the second pass syncs once for all of them.
 */
int arch_ftrace_replace_prepare(struct dyn_ftrace *rec, int update)
{
	if (update == FTRACE_UPDATE_MAKE_CALL || update == FTRACE_UPDATE_MODIFY_CALL)
		resolve(rec->ip, ftrace_get_addr_new(rec), true);
	return 0;
}

int ftrace_update_ftrace_func(ftrace_func_t func)
{
	smp_store_release(&arm64_ftrace_call_func, func);
	return 0;
}

int ftrace_arch_code_modify_prepare(void)
{
	return 0;
}

int ftrace_arch_code_modify_post_process(void)
{
	int ret = flush_movs(), ret2 = arm64_patch_finish();

	return ret ? ret : ret2;
}

/* arm64 has no per-ops trampolines (the literal serves a lone ops) */
void arch_ftrace_update_trampoline(struct ftrace_ops *ops)
{
	(void)ops;
}

void arch_ftrace_trampoline_quiesce(struct ftrace_ops *ops)
{
	(void)ops;
}

void arch_ftrace_trampoline_free(struct ftrace_ops *ops)
{
	(void)ops;
}

int arch_ftrace_site_bytes(unsigned long ip, unsigned char *buf, size_t len)
{
	uint32_t insn = a64_read(ip);

	if (len > MCOUNT_INSN_SIZE)
		len = MCOUNT_INSN_SIZE;
	memcpy(buf, &insn, len);
	return (int)len;
}
