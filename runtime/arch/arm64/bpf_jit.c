// SPDX-License-Identifier: MIT
/*
 * arch/arm64/bpf_jit.c - the trampoline image generator, following the
 * structure of the kernel's arm64 prepare_trampoline()
 * (arch/arm64/net/bpf_jit_comp.c; written here from scratch).
 *
 * Entry: by BL from the site or BR X17 from ftrace_caller, both with
 * x9 = the traced function's return address and x30 = its body (site + 4).
 * No WITH_JMP on arm64: images always return through the call-mode exits.
 *
 * Frame (x29-based, two frame records like the kernel's):
 *   [x29 + 16]  fp, x9     the traced function's caller
 *   [x29]       fp, x30    the traced function (x30 = its body)
 *   sp + 0      ctx[0..n-1] arguments, ctx[n] return value slot
 *               x1 after the original; x0-x8 at entry; x19, x20
 *               q0-q7 at entry; q0-q3 after the original
 *
 * Image:
 *   bti jc; usft_task.nest++ (tasks-RCU mark); frame records; sub sp
 *   save x0-x8, x18, q0-q7, x19, x20; x19 = &usft_task; fill ctx
 *   first entry of the thread: usft_task_register()
 *   fentry callbacks
 *   CALL_ORIG:  ret slot = 0; fmod_ret callbacks (non-zero -> do_fexit)
 *               push the image on usft_task.orig_stack; leave the tasks
 *               span; restore x0-x8/x18/q0-q7; call the body with the RET
 *               trick (x10 = body, adr lr, ret x10: BTI-safe, the body
 *               returns right after); save x0/x1/q0-q3; nest++; pop
 *               ip_after_call: NOP (B ip_epilogue once the image is retired)
 *   do_fexit:   fexit callbacks
 *   ip_epilogue: restore the return registers (CALL_ORIG) or the argument
 *               registers (RESTORE_REGS); nest--; restore x19/x20; pop
 *               the frame records (x30 = body, x9 = caller)
 *   SKIP_FRAME: mov x30, x9; ret x9        straight back to the caller
 *   else:       mov x10, x30; mov x30, x9; ret x10   into the body
 *   data words: (callback, cookie, miss counter) per callback
 * Each callback runs under the per-thread "in a trampoline callback" flag:
 * a callback reaching a traced function again does not run nested
 * callbacks (counted as a miss on the link); the original still runs.
 */
#include <string.h>
#include "core/bpf_trampoline.h"
#include "insn.h"

/*
 * Callback, cookie and miss counter of each callback live in data words at
 * the end of the image, read with PC-relative literal loads (fixed up once
 * the code size is known): retiring an image points them at a stub before
 * the grace period (core image_quiesce()), so a thread that enters the
 * image late - the tasks mark is several instructions in on arm64 - runs
 * no callback of a detached link.
 */
#define MAX_SLOTS (3 * 3 * USFT_TRAMP_MAX_LINKS)
struct jit {
	uint32_t *buf;
	size_t len, cap;	/* in instructions */
	bool overflow;
	size_t slot_fix[MAX_SLOTS];	/* instructions loading a data word */
	int slot_idx[MAX_SLOTS];
	int nfix;
	unsigned long slots[MAX_SLOTS];
	int nslots;
};

static void emit(struct jit *j, uint32_t insn);

static int new_slot(struct jit *j, unsigned long v)
{
	if (j->nslots == MAX_SLOTS) {
		j->overflow = true;
		return 0;
	}
	j->slots[j->nslots] = v;
	return j->nslots++;
}

/* ldr x<rt>, <data word @slot> (imm19 fixed up at the end) */
static void ldr_slot(struct jit *j, int rt, int slot)
{
	if (j->nfix == MAX_SLOTS) {
		j->overflow = true;
		return;
	}
	j->slot_fix[j->nfix] = j->len;
	j->slot_idx[j->nfix++] = slot;
	emit(j, 0x58000000u | rt);
}

static void emit(struct jit *j, uint32_t insn)
{
	if (j->len >= j->cap) {
		j->overflow = true;
		return;
	}
	j->buf[j->len++] = insn;
}

static void patch(struct jit *j, size_t at, uint32_t insn)
{
	if (!j->overflow && at < j->len)
		j->buf[at] = insn;
}

/* registers */
enum { X0 = 0, X1 = 1, X8 = 8, X9 = 9, X10 = 10, X11 = 11, X12 = 12, X13 = 13, X14 = 14,
       X15 = 15, X16 = 16, X17 = 17, X19 = 19, X20 = 20, FP = 29, LR = 30, SP = 31, XZR = 31 };

static void mov_imm64(struct jit *j, int rd, unsigned long v)
{
	emit(j, 0xd2800000u | ((uint32_t)(v & 0xffff) << 5) | rd);		/* movz */
	for (int hw = 1; hw < 4; hw++)					/* movk */
		emit(j, 0xf2800000u | (uint32_t)hw << 21 |
			((uint32_t)((v >> (16 * hw)) & 0xffff) << 5) | rd);
}

static void add_imm(struct jit *j, int rd, int rn, unsigned int imm)
{
	emit(j, 0x91000000u | (imm & 0xfff) << 10 | rn << 5 | rd);
}

static void sub_imm(struct jit *j, int rd, int rn, unsigned int imm)
{
	emit(j, 0xd1000000u | (imm & 0xfff) << 10 | rn << 5 | rd);
}

static void mov_reg(struct jit *j, int rd, int rm)	/* orr rd, xzr, rm */
{
	emit(j, 0xaa0003e0u | rm << 16 | rd);
}

static void ldr_x(struct jit *j, int rt, int rn, unsigned int off)
{
	emit(j, 0xf9400000u | (off / 8) << 10 | rn << 5 | rt);
}

static void str_x(struct jit *j, int rt, int rn, unsigned int off)
{
	emit(j, 0xf9000000u | (off / 8) << 10 | rn << 5 | rt);
}

static void ldr_w(struct jit *j, int rt, int rn, unsigned int off)
{
	emit(j, 0xb9400000u | (off / 4) << 10 | rn << 5 | rt);
}

static void str_w(struct jit *j, int rt, int rn, unsigned int off)
{
	emit(j, 0xb9000000u | (off / 4) << 10 | rn << 5 | rt);
}

static void ldr_q(struct jit *j, int rt, int rn, unsigned int off)
{
	emit(j, 0x3dc00000u | (off / 16) << 10 | rn << 5 | rt);
}

static void str_q(struct jit *j, int rt, int rn, unsigned int off)
{
	emit(j, 0x3d800000u | (off / 16) << 10 | rn << 5 | rt);
}

static void ldr_d(struct jit *j, int rt, int rn, unsigned int off)
{
	emit(j, 0xfd400000u | (off / 8) << 10 | rn << 5 | rt);
}

static void str_d(struct jit *j, int rt, int rn, unsigned int off)
{
	emit(j, 0xfd000000u | (off / 8) << 10 | rn << 5 | rt);
}

static void stp_pre16(struct jit *j, int rt, int rt2)	/* stp rt, rt2, [sp, #-16]! */
{
	emit(j, 0xa9800000u | (0x7eu << 15) | rt2 << 10 | SP << 5 | rt);
}

static void ldp_post16(struct jit *j, int rt, int rt2)	/* ldp rt, rt2, [sp], #16 */
{
	emit(j, 0xa8c00000u | (0x02u << 15) | rt2 << 10 | SP << 5 | rt);
}

static void blr(struct jit *j, int rn)
{
	emit(j, 0xd63f0000u | rn << 5);
}

static void ret_reg(struct jit *j, int rn)
{
	emit(j, 0xd65f0000u | rn << 5);
}

static void call_abs(struct jit *j, unsigned long target)
{
	mov_imm64(j, X16, target);
	blr(j, X16);
}

/* branches within the image, by instruction index */
static uint32_t b_to(size_t from, size_t to)
{
	return 0x14000000u | ((uint32_t)((long)to - (long)from) & 0x03ffffffu);
}

static uint32_t cbnz_x(int rt, size_t from, size_t to)
{
	return 0xb5000000u | ((uint32_t)((long)to - (long)from) & 0x7ffffu) << 5 | rt;
}

static uint32_t cbnz_w(int rt, size_t from, size_t to)
{
	return 0x35000000u | ((uint32_t)((long)to - (long)from) & 0x7ffffu) << 5 | rt;
}

static uint32_t ldr_lit_x(int rt, size_t from, size_t to)	/* ldr xt, <to> */
{
	return 0x58000000u | ((uint32_t)((long)to - (long)from) & 0x7ffffu) << 5 | rt;
}

static uint32_t bcond(int cond, size_t from, size_t to)
{
	return 0x54000000u | ((uint32_t)((long)to - (long)from) & 0x7ffffu) << 5 | cond;
}

#define COND_NE 1
#define COND_HS 2

/* x10 = &usft_task (x11 clobbered) */
static void task_ptr_x10(struct jit *j, unsigned long tpoff)
{
	emit(j, 0xd53bd040u | X10);	/* mrs x10, tpidr_el0 */
	mov_imm64(j, X11, tpoff);
	emit(j, 0x8b000000u | X11 << 16 | X10 << 5 | X10);	/* add x10, x10, x11 */
}

static void nest_inc(struct jit *j, int task)
{
	ldr_x(j, X12, task, USFT_TASK_NEST);
	add_imm(j, X12, X12, 1);
	str_x(j, X12, task, USFT_TASK_NEST);
}

/* nest--; gen++ when it reaches 0 (a quiescent point) */
static void nest_dec(struct jit *j, int task)
{
	size_t at;

	ldr_x(j, X12, task, USFT_TASK_NEST);
	emit(j, 0xf1000400u | X12 << 5 | X12);	/* subs x12, x12, #1 */
	str_x(j, X12, task, USFT_TASK_NEST);
	at = j->len;
	emit(j, 0);				/* b.ne over the gen++ */
	ldr_x(j, X12, task, USFT_TASK_GEN);
	add_imm(j, X12, X12, 1);
	str_x(j, X12, task, USFT_TASK_GEN);
	patch(j, at, bcond(COND_NE, at, j->len));
}

struct frame {
	unsigned int ctx, ret, x1s, gp, callee, qargs, qret, size;
};

static void layout(struct frame *f, int n)
{
	unsigned int off;

	f->ctx = 0;
	f->ret = 8 * n;
	f->x1s = f->ret + 8;
	f->gp = f->x1s + 8;		/* x0-x8, x18 */
	f->callee = f->gp + 10 * 8;	/* x19, x20 */
	off = f->callee + 16;
	off = (off + 15) & ~15u;
	f->qargs = off;			/* q0-q7 */
	f->qret = off + 128;		/* q0-q3 */
	f->size = (f->qret + 64 + 15) & ~15u;
}

/*
 * x0-x7 and q0-q7 (arguments), x8 (indirect result), x18 (GCC's static
 * chain of a nested function; Linux lets a callback use it as a temporary)
 */
static void save_args(struct jit *j, const struct frame *f)
{
	for (int r = 0; r <= 8; r++)
		str_x(j, r, SP, f->gp + 8 * r);
	str_x(j, 18, SP, f->gp + 8 * 9);
	for (int q = 0; q < 8; q++)
		str_q(j, q, SP, f->qargs + 16 * q);
}

static void restore_args(struct jit *j, const struct frame *f)
{
	for (int q = 0; q < 8; q++)
		ldr_q(j, q, SP, f->qargs + 16 * q);
	for (int r = 0; r <= 8; r++)
		ldr_x(j, r, SP, f->gp + 8 * r);
	ldr_x(j, 18, SP, f->gp + 8 * 9);
}

/* ctx[i] = argument i (integer register, or the low 64 bits of a d register) */
static void fill_ctx(struct jit *j, const struct frame *f, const struct usft_func_model *m)
{
	int gi = 0, fi = 0;

	for (int i = 0; i < m->nr_args; i++) {
		if (m->fp_mask & (1u << i))
			str_d(j, fi++, SP, f->ctx + 8 * i);
		else
			str_x(j, gi++, SP, f->ctx + 8 * i);
	}
}

/*
 * One callback, skipped (a miss) when this thread is already inside a
 * trampoline callback; else prog(ctx, cookie).  fmod_ret keeps the return
 * in the ret slot and returns the index of its "cbnz x0, do_fexit".
 */
static size_t emit_prog(struct jit *j, const struct frame *f, const struct tramp_prog *p,
			bool fmod_ret)
{
	int slot_prog = new_slot(j, (unsigned long)p->prog);
	int slot_cookie = new_slot(j, (unsigned long)p->cookie);
	int slot_misses = new_slot(j, (unsigned long)p->misses);
	size_t skip, over, fix = 0, loop;

	ldr_w(j, X11, X19, USFT_TASK_IN_PROG);
	skip = j->len;
	emit(j, 0);				/* cbnz w11, miss */
	emit(j, 0x52800020u | X11);		/* mov w11, #1 */
	str_w(j, X11, X19, USFT_TASK_IN_PROG);
	/* prog(ctx, cookie), both read from the image's data words */
	add_imm(j, X0, SP, f->ctx);
	ldr_slot(j, X1, slot_cookie);
	ldr_slot(j, X16, slot_prog);
	blr(j, X16);
	str_w(j, XZR, X19, USFT_TASK_IN_PROG);
	if (fmod_ret) {
		str_x(j, X0, SP, f->ret);
		fix = j->len;
		emit(j, 0);			/* cbnz x0, do_fexit */
	}
	over = j->len;
	emit(j, 0);				/* b over the miss path */
	patch(j, skip, cbnz_w(X11, skip, j->len));
	/* miss: an atomic increment without LSE (ldxr/stxr) */
	ldr_slot(j, X16, slot_misses);
	loop = j->len;
	emit(j, 0xc85f7c00u | X16 << 5 | X17);			/* ldxr x17, [x16] */
	add_imm(j, X17, X17, 1);
	emit(j, 0xc8007c00u | X15 << 16 | X16 << 5 | X17);	/* stxr w15, x17, [x16] */
	emit(j, cbnz_w(X15, j->len, loop));
	patch(j, over, b_to(over, j->len));
	return fix;
}

int arch_prepare_bpf_trampoline(const struct tramp_desc *d, unsigned char *buf, size_t cap,
				unsigned long at, size_t *ip_after_call, size_t *ip_epilogue,
				size_t *data_off, int *nr_data)
{
	const struct usft_func_model *m = &d->model;
	bool call_orig = d->flags & BPF_TRAMP_F_CALL_ORIG;
	bool skip_frame = d->flags & BPF_TRAMP_F_SKIP_FRAME;
	static struct jit j;	/* large; callers hold the trampoline mutex */
	size_t fixups[USFT_TRAMP_MAX_LINKS], nfix = 0, at_skip;
	struct frame f;
	int i;

	(void)at;
	if (m->nr_args < 0 || m->nr_args > MAX_BPF_FUNC_ARGS)
		return -EOPNOTSUPP;
	if (((unsigned long)buf & 7) || (call_orig && !skip_frame))
		return -EINVAL;		/* no jmp mode on arm64 */
	memset(&j, 0, sizeof(j));
	j.buf = (uint32_t *)buf;
	j.cap = cap / 4;
	layout(&f, m->nr_args);

	emit(&j, A64_BTI_JC);
	task_ptr_x10(&j, d->tpoff);
	nest_inc(&j, X10);
	stp_pre16(&j, FP, X9);			/* the caller's frame record */
	add_imm(&j, FP, SP, 0);
	stp_pre16(&j, FP, LR);			/* the traced function's */
	add_imm(&j, FP, SP, 0);
	sub_imm(&j, SP, SP, f.size);
	save_args(&j, &f);
	str_x(&j, X19, SP, f.callee);
	str_x(&j, X20, SP, f.callee + 8);
	mov_reg(&j, X19, X10);			/* x19 = &usft_task from here on */
	fill_ctx(&j, &f, m);
	/* first entry of this thread: register it for grace periods */
	ldr_w(&j, X12, X19, USFT_TASK_STATE);
	at_skip = j.len;
	emit(&j, 0);				/* cbnz w12, over the call */
	call_abs(&j, (unsigned long)usft_task_register);
	patch(&j, at_skip, cbnz_w(X12, at_skip, j.len));

	if (call_orig)
		str_x(&j, XZR, SP, f.ret);
	for (i = 0; i < d->nr[USFT_TRAMP_FENTRY]; i++)
		emit_prog(&j, &f, &d->progs[USFT_TRAMP_FENTRY][i], false);

	if (call_orig) {
		for (i = 0; i < d->nr[USFT_TRAMP_FMODRET]; i++)
			fixups[nfix++] = emit_prog(&j, &f, &d->progs[USFT_TRAMP_FMODRET][i], true);
		/*
		 * The original may block: push this image on the thread's
		 * orig_stack (what keeps it alive), then leave the tasks span.
		 */
		ldr_x(&j, X12, X19, USFT_TASK_ORIG_DEPTH);
		emit(&j, 0xf100001fu | USFT_ORIG_MAX << 10 | X12 << 5);	/* cmp x12, #MAX */
		at_skip = j.len;
		emit(&j, 0);						/* b.hs over */
		mov_imm64(&j, X14, d->image_id);
		add_imm(&j, X13, X19, USFT_TASK_ORIG_STACK);
		emit(&j, 0xf8207800u | X12 << 16 | X13 << 5 | X14);	/* str x14, [x13, x12, lsl #3] */
		patch(&j, at_skip, bcond(COND_HS, at_skip, j.len));
		add_imm(&j, X12, X12, 1);
		str_x(&j, X12, X19, USFT_TASK_ORIG_DEPTH);
		nest_dec(&j, X19);
		restore_args(&j, &f);
		/* call the body: lr = the instruction after the ret */
		ldr_x(&j, X10, FP, 8);			/* the saved x30: the body */
		emit(&j, 0x10000040u | LR);		/* adr x30, .+8 */
		ret_reg(&j, X10);
		str_x(&j, X0, SP, f.ret);
		str_x(&j, X1, SP, f.x1s);
		for (int q = 0; q < 4; q++)
			str_q(&j, q, SP, f.qret + 16 * q);
		if (m->ret_fp)
			str_d(&j, 0, SP, f.ret);
		/* back in the tasks span before the image is let go */
		nest_inc(&j, X19);
		ldr_x(&j, X12, X19, USFT_TASK_ORIG_DEPTH);
		sub_imm(&j, X12, X12, 1);
		str_x(&j, X12, X19, USFT_TASK_ORIG_DEPTH);
		/*
		 * b .+4: ends qemu's translation block here, so ip_after_call is
		 * fetched afresh once retired, as hardware does after SYNC_CORE.
		 */
		emit(&j, b_to(j.len, j.len + 1));
		*ip_after_call = j.len * 4;
		emit(&j, A64_NOP);
	}
	/* do_fexit: */
	for (size_t k = 0; k < nfix; k++)
		patch(&j, fixups[k], cbnz_x(X0, fixups[k], j.len));
	for (i = 0; i < d->nr[USFT_TRAMP_FEXIT]; i++)
		emit_prog(&j, &f, &d->progs[USFT_TRAMP_FEXIT][i], false);

	*ip_epilogue = j.len * 4;
	if (call_orig) {
		for (int q = 0; q < 4; q++)
			ldr_q(&j, q, SP, f.qret + 16 * q);
		ldr_x(&j, X0, SP, f.ret);
		ldr_x(&j, X1, SP, f.x1s);
		if (m->ret_fp)
			ldr_d(&j, 0, SP, f.ret);
	} else {
		restore_args(&j, &f);
	}
	nest_dec(&j, X19);
	ldr_x(&j, X19, SP, f.callee);
	ldr_x(&j, X20, SP, f.callee + 8);
	add_imm(&j, SP, FP, 0);			/* mov sp, x29 */
	ldp_post16(&j, FP, LR);			/* x30 = the body */
	ldp_post16(&j, FP, X9);			/* x9 = the caller's return address */
	if (skip_frame) {
		mov_reg(&j, LR, X9);
		ret_reg(&j, X9);
	} else {
		mov_reg(&j, X10, LR);
		mov_reg(&j, LR, X9);
		ret_reg(&j, X10);
	}
	emit(&j, A64_BRK(0x3e8));
	/* the data words, 8-aligned, and the literal-load fix-ups */
	if (j.len & 1)
		emit(&j, A64_BRK(0x3e9));
	*data_off = j.len * 4;
	*nr_data = j.nslots;
	for (int k = 0; k < j.nslots; k++) {
		emit(&j, (uint32_t)j.slots[k]);
		emit(&j, (uint32_t)(j.slots[k] >> 32));
	}
	for (int k = 0; k < j.nfix; k++) {
		size_t at_i = j.slot_fix[k];
		size_t word = *data_off / 4 + 2 * (size_t)j.slot_idx[k];

		patch(&j, at_i, j.buf[at_i] | ldr_lit_x(0, at_i, word));
	}
	if (j.overflow)
		return -E2BIG;
	return (int)(j.len * 4);
}

/* nothing arch-specific at retirement: the data words do it */
int arch_bpf_tramp_retire(unsigned long image, size_t size)
{
	return 1;
}

int arch_bpf_tramp_skip_fexit(unsigned long ip_after_call, unsigned long ip_epilogue)
{
	if (!a64_in_branch_range(ip_after_call, ip_epilogue))
		return -EINVAL;
	return arm64_patch_insn(ip_after_call, A64_NOP, a64_branch(ip_after_call, ip_epilogue, false));
}

bool arch_bpf_tramp_has_jmp(void)
{
	return false;
}
