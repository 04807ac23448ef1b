// SPDX-License-Identifier: MIT
/*
 * arch/x86_64/bpf_jit.c - the trampoline image generator, following the
 * structure of the kernel's __arch_prepare_bpf_trampoline() (written here
 * from scratch).
 *
 * Frame, rbp-based, from high to low:
 *   [rbp+8]   return into the body (call mode) or the caller's return (jmp)
 *   [rbp]     saved rbp
 *   ctx[n]    return value slot                       rbp - 8
 *   ctx[0..n-1] the arguments                         rbp - 8*(n+1) ...
 *   rax, r10, 8 argument registers not in ctx, xmm0-7 (saved for the
 *   original: al carries the vector count of variadic calls, r10 the
 *   static chain)
 *
 * Image:
 *   inc usft_task.span_in (tasks-RCU mark); push rbp; mov rsp,rbp; sub frame
 *   save registers; first-entry registration
 *   fentry callbacks
 *   CALL_ORIG:  ret slot = 0; fmod_ret callbacks (non-zero -> do_fexit)
 *               push the image on usft_task.orig_stack; leave the
 *               tasks span (nest--); restore registers; call the body;
 *               save rax/xmm0; nest++; pop orig_stack
 *               ip_after_call: nop5 (jmp ip_epilogue once retired)
 *   do_fexit:   fexit callbacks
 *   ip_epilogue: restore (RESTORE_REGS: the arguments; else rax/xmm0 from
 *               the ret slot); leave; nest--; SKIP_FRAME: drop the
 *               return-into-body slot; ret
 * Each callback runs under a per-thread "in a trampoline callback" bit: a
 * callback reaching a traced function again does not run nested callbacks
 * (counted as a miss on the link), the original still runs.
 */
#include <string.h>
#include "core/bpf_trampoline.h"
#include "mem/execmem.h"
#include "insn.h"


/*
 * Callback, cookie and miss counter of each callback live in data words at
 * the end of the image, read with RIP-relative loads (fixed up once the
 * code size is known): retiring an image points them at a stub before the
 * grace period, so even a thread paused before the image's first
 * instruction runs no callback of a detached link.
 */
#define MAX_SLOTS (3 * 3 * USFT_TRAMP_MAX_LINKS)
struct jit {
	unsigned char *buf;
	size_t len, cap;
	bool overflow;
	size_t slot_fix[MAX_SLOTS];	/* offsets of disp32 fields */
	int slot_idx[MAX_SLOTS];	/* which data word */
	int nfix;
	unsigned long slots[MAX_SLOTS];
	int nslots;
	/* miss paths, emitted out of line after the epilogue */
	struct { size_t jne_at, back_to; int slot; } miss[3 * USFT_TRAMP_MAX_LINKS];
	int nmiss;
};

static void emit(struct jit *j, const void *p, size_t n)
{
	if (j->len + n > j->cap) {
		j->overflow = true;
		return;
	}
	memcpy(j->buf + j->len, p, n);
	j->len += n;
}

static void emit1(struct jit *j, unsigned char b)
{
	emit(j, &b, 1);
}

static void emit4(struct jit *j, unsigned int v)
{
	emit(j, &v, 4);
}

static void emit8(struct jit *j, unsigned long v)
{
	emit(j, &v, 8);
}

/* REX.W op [rbp + disp32], reg */
static void emit_rbp(struct jit *j, unsigned char op, int reg, int disp)
{
	emit1(j, 0x48 | (reg >= 8 ? 4 : 0));
	emit1(j, op);
	emit1(j, 0x80 | ((reg & 7) << 3) | 5);
	emit4(j, (unsigned int)disp);
}

static void store(struct jit *j, int reg, int disp)	/* mov reg, [rbp+disp] */
{
	emit_rbp(j, 0x89, reg, disp);
}

static void load(struct jit *j, int reg, int disp)	/* mov [rbp+disp], reg */
{
	emit_rbp(j, 0x8b, reg, disp);
}

static void xmm_op(struct jit *j, unsigned char op, int x, int disp)	/* movups */
{
	emit1(j, 0x0f);
	emit1(j, op);
	emit1(j, 0x80 | (x << 3) | 5);
	emit4(j, (unsigned int)disp);
}

/* op %fs:(tpoff + field) with a 32-bit absolute displacement */
static void fs_op(struct jit *j, const char *pre, size_t n, unsigned char modrm,
		  unsigned long addr)
{
	emit1(j, 0x64);
	emit(j, pre, n);
	emit1(j, modrm);
	emit1(j, 0x25);
	emit4(j, (unsigned int)addr);
}

static void fs_incq(struct jit *j, unsigned long a)
{
	fs_op(j, "\x48\xff", 2, 0x04, a);
}

static void fs_decq(struct jit *j, unsigned long a)
{
	fs_op(j, "\x48\xff", 2, 0x0c, a);
}

static int new_slot(struct jit *j, unsigned long v)
{
	if (j->nslots == MAX_SLOTS) {
		j->overflow = true;
		return 0;
	}
	j->slots[j->nslots] = v;
	return j->nslots++;
}

/* the disp32 just emitted refers to data word @slot */
static void slot_ref(struct jit *j, int slot)
{
	if (j->nfix == MAX_SLOTS) {
		j->overflow = true;
		return;
	}
	j->slot_fix[j->nfix] = j->len;
	j->slot_idx[j->nfix++] = slot;
	emit4(j, 0);
}

static void movabs_r11(struct jit *j, unsigned long v)
{
	emit(j, "\x49\xbb", 2);
	emit8(j, v);
}

static void call_abs(struct jit *j, unsigned long target)
{
	movabs_r11(j, target);
	emit(j, "\x41\xff\xd3", 3);	/* call *%r11 */
}

/* span_in++: enter the tasks-RCU span (core/internal.h, struct usft_task) */
static void task_enter(struct jit *j, unsigned long tpoff)
{
	fs_incq(j, tpoff + USFT_TASK_SPAN_IN);
}

/* span_out++; if that left the outermost level, span_gen++ (r11 is free) */
static void task_exit(struct jit *j, unsigned long tpoff)
{
	fs_incq(j, tpoff + USFT_TASK_SPAN_OUT);
	fs_op(j, "\x4c\x8b", 2, 0x1c, tpoff + USFT_TASK_SPAN_IN);	/* mov in, %r11 */
	fs_op(j, "\x4c\x3b", 2, 0x1c, tpoff + USFT_TASK_SPAN_OUT);	/* cmp out, %r11 */
	emit(j, "\x75\x09", 2);		/* jne over the 9-byte incq */
	fs_incq(j, tpoff + USFT_TASK_SPAN_GEN);
}

static const int arg_regs[6] = { 7, 6, 2, 1, 8, 9 };	/* rdi rsi rdx rcx r8 r9 */

struct frame {
	int n;
	int ret;		/* ctx[n] */
	int ctx;		/* ctx[0] */
	int rax, r10, retfp;
	int gp[6];		/* saved argument registers */
	int xmm;		/* 8 x 16 bytes */
	int size;
};

static void layout(struct frame *f, int n, bool jmp_entry)
{
	int off;

	f->n = n;
	f->ret = -8;
	f->ctx = -8 * (n + 1);
	off = f->ctx;
	f->rax = off -= 8;
	f->r10 = off -= 8;
	f->retfp = off -= 8;
	for (int i = 0; i < 6; i++)
		f->gp[i] = off -= 8;
	off -= 128;
	f->xmm = off;
	f->size = -off;
	/*
	 * rsp must be 0 mod 16 at every call.  The image aligns it after
	 * setting the frame pointer and keeps the frame a multiple of 16:
	 * gcc's -fipa-stack-alignment calls local functions that need no
	 * alignment with a misaligned stack, so the parity at entry is not
	 * known.  Every frame access is rbp-relative; leave undoes it.
	 */
	(void)jmp_entry;
	f->size = (f->size + 15) & ~15;
}

/*
 * Which registers the original may read at entry: with a DWARF model, its
 * integer and vector argument registers (plus al for variadic functions);
 * otherwise all six, rax, r10 (the static chain of a GNU C nested function)
 * and xmm0-7.  A DWARF model is never one of a nested function: the lookup
 * (elf/dwarf.c) does not descend into subprograms, so r10 is dead then.
 */
static void live_regs(const struct usft_func_model *m, int *ngp, int *nxmm, bool *rax,
		      bool *r10)
{
	int gp = 0, fp = 0;

	*r10 = !m->known;
	if (!m->known) {
		*ngp = 6;
		*nxmm = 8;
		*rax = true;
		return;
	}
	for (int i = 0; i < m->nr_args; i++) {
		if (m->fp_mask & (1u << i))
			fp++;
		else
			gp++;
	}
	*ngp = m->variadic ? 6 : gp;	/* integer varargs ride in rsi..r9 too */
	*nxmm = m->variadic ? 8 : fp;
	*rax = m->variadic;
}

/* ctx index of the @gpi-th integer argument register, or -1 (not in ctx) */
static int ctx_of_gp(const struct usft_func_model *m, int gpi)
{
	for (int i = 0, g = 0; i < m->nr_args; i++) {
		if (m->fp_mask & (1u << i))
			continue;
		if (g++ == gpi)
			return i;
	}
	return -1;
}

/* integer argument registers already in ctx are not stored twice */
static void save_regs(struct jit *j, const struct frame *f, const struct usft_func_model *m)
{
	int ngp, nxmm;
	bool rax, r10;

	live_regs(m, &ngp, &nxmm, &rax, &r10);
	for (int i = 0; i < ngp; i++)
		if (ctx_of_gp(m, i) < 0)
			store(j, arg_regs[i], f->gp[i]);
	if (rax)
		store(j, 0, f->rax);
	if (r10)
		store(j, 10, f->r10);
	for (int x = 0; x < nxmm; x++)
		xmm_op(j, 0x11, x, f->xmm + 16 * x);
}

static void restore_regs(struct jit *j, const struct frame *f, const struct usft_func_model *m)
{
	int ngp, nxmm;
	bool rax, r10;

	live_regs(m, &ngp, &nxmm, &rax, &r10);
	for (int x = 0; x < nxmm; x++)
		xmm_op(j, 0x10, x, f->xmm + 16 * x);
	for (int i = 0; i < ngp; i++) {
		int c = ctx_of_gp(m, i);

		load(j, arg_regs[i], c < 0 ? f->gp[i] : f->ctx + 8 * c);
	}
	if (r10)
		load(j, 10, f->r10);
	if (rax)
		load(j, 0, f->rax);
}

/* ctx[i] = argument i (integer register, or the low 64 bits of an xmm) */
static void fill_ctx(struct jit *j, const struct frame *f, const struct usft_func_model *m)
{
	int gi = 0, fi = 0;

	for (int i = 0; i < m->nr_args; i++) {
		if (m->fp_mask & (1u << i)) {
			/* movq xmm<fi>, [rbp+ctx+8i] */
			emit1(j, 0x66);
			emit(j, "\x0f\xd6", 2);
			emit1(j, 0x80 | (fi << 3) | 5);
			emit4(j, (unsigned int)(f->ctx + 8 * i));
			fi++;
		} else {
			store(j, arg_regs[gi++], f->ctx + 8 * i);
		}
	}
}

/*
 * One callback: skipped (miss) when this thread is already inside a
 * trampoline callback; else prog(ctx, cookie).  @store_ret: fmod_ret keeps
 * the return in ctx[n].  Returns the offset of the rel32 of a "jnz
 * do_fexit" for fmod_ret (to be fixed up), or 0.
 */
static size_t emit_prog(struct jit *j, const struct frame *f, unsigned long tpoff,
			const struct tramp_prog *p, bool fmod_ret)
{
	unsigned long flag = tpoff + USFT_TASK_IN_PROG;
	int slot_prog = new_slot(j, (unsigned long)p->prog);
	int slot_cookie = new_slot(j, (unsigned long)p->cookie);
	int slot_misses = new_slot(j, (unsigned long)p->misses);
	size_t skip_at, fix = 0;

	/* cmpl $0, %fs:in_prog ; jne skip ; movl $1, %fs:in_prog */
	fs_op(j, "\x83", 1, 0x3c, flag);
	emit1(j, 0);
	emit(j, "\x0f\x85", 2);
	skip_at = j->len;
	emit4(j, 0);
	fs_op(j, "\xc7", 1, 0x04, flag);
	emit4(j, 1);
	/* prog(ctx, cookie), both read from the image's data words */
	emit(j, "\x48\x8d\xbd", 3);	/* lea ctx(%rbp), %rdi */
	emit4(j, (unsigned int)f->ctx);
	emit(j, "\x48\x8b\x35", 3);	/* mov cookie(%rip), %rsi */
	slot_ref(j, slot_cookie);
	emit(j, "\x4c\x8b\x1d", 3);	/* mov prog(%rip), %r11 */
	slot_ref(j, slot_prog);
	emit(j, "\x41\xff\xd3", 3);	/* call *%r11 */
	fs_op(j, "\xc7", 1, 0x04, flag);	/* movl $0, %fs:in_prog */
	emit4(j, 0);
	if (fmod_ret) {
		store(j, 0, f->ret);
		emit(j, "\x48\x85\xc0", 3);	/* test rax, rax */
		emit(j, "\x0f\x85", 2);		/* jnz do_fexit */
		fix = j->len;
		emit4(j, 0);
	}
	/* the miss path (a recursing callback) is out of line: no taken jump here */
	if (j->nmiss < (int)ARRAY_SIZE(j->miss)) {
		j->miss[j->nmiss].jne_at = skip_at;
		j->miss[j->nmiss].back_to = j->len;
		j->miss[j->nmiss].slot = slot_misses;
		j->nmiss++;
	} else {
		j->overflow = true;
	}
	return fix;
}

static void fix_rel32(struct jit *j, size_t at, size_t target)
{
	unsigned int rel = (unsigned int)(target - (at + 4));

	if (!j->overflow && at)
		memcpy(j->buf + at, &rel, 4);
}

int arch_prepare_bpf_trampoline(const struct tramp_desc *d, unsigned char *buf, size_t cap,
				unsigned long at, size_t *ip_after_call, size_t *ip_epilogue,
				size_t *data_off, int *nr_data)
{
	const struct usft_func_model *m = &d->model;
	bool call_orig = d->flags & BPF_TRAMP_F_CALL_ORIG;
	bool skip_frame = d->flags & BPF_TRAMP_F_SKIP_FRAME;
	bool jmp_entry = call_orig && !skip_frame;
	static struct jit j;	/* large; callers hold the trampoline mutex */
	size_t fixups[USFT_TRAMP_MAX_LINKS], nfix = 0, reg_at, reg_back;
	struct frame f;
	int i;

	(void)at;
	if (m->nr_args < 0 || m->nr_args > MAX_BPF_FUNC_ARGS)
		return -EOPNOTSUPP;
	memset(&j, 0, sizeof(j));
	j.buf = buf;
	j.cap = cap;
	layout(&f, m->nr_args, jmp_entry);

	task_enter(&j, d->tpoff);
	emit1(&j, 0x55);				/* push rbp */
	emit(&j, "\x48\x89\xe5", 3);			/* mov rsp, rbp */
	emit(&j, "\x48\x83\xe4\xf0", 4);		/* and $-16, rsp */
	emit(&j, "\x48\x81\xec", 3);			/* sub $size, rsp */
	emit4(&j, (unsigned int)f.size);
	save_regs(&j, &f, m);
	fill_ctx(&j, &f, m);
	/* first entry of this thread: register it for grace periods (out of line) */
	fs_op(&j, "\x83", 1, 0x3c, d->tpoff + USFT_TASK_STATE);
	emit1(&j, 0);					/* cmpl $0, %fs:state */
	emit(&j, "\x0f\x84", 2);			/* je register (fixed below) */
	reg_at = j.len;
	emit4(&j, 0);
	reg_back = j.len;

	for (i = 0; i < d->nr[USFT_TRAMP_FENTRY]; i++)
		emit_prog(&j, &f, d->tpoff, &d->progs[USFT_TRAMP_FENTRY][i], false);

	if (call_orig) {
		emit(&j, "\x48\xc7\x85", 3);		/* movq $0, ret(%rbp) */
		emit4(&j, (unsigned int)f.ret);
		emit4(&j, 0);
		for (i = 0; i < d->nr[USFT_TRAMP_FMODRET]; i++)
			fixups[nfix++] = emit_prog(&j, &f, d->tpoff,
						   &d->progs[USFT_TRAMP_FMODRET][i], true);
		/*
		 * The original may block: push this image on the thread's
		 * orig_stack (what keeps it alive), then leave the tasks span.
		 */
		fs_op(&j, "\x4c\x8b", 2, 0x1c, d->tpoff + USFT_TASK_ORIG_DEPTH); /* mov depth, %r11 */
		emit(&j, "\x49\x83\xfb", 3);			/* cmp $MAX, %r11 */
		emit1(&j, USFT_ORIG_MAX);
		emit(&j, "\x73\x13", 2);			/* jae over the 19-byte store */
		emit(&j, "\x48\xb8", 2);			/* movabs $image, %rax */
		emit8(&j, d->image_id);
		emit(&j, "\x64\x4a\x89\x04\xdd", 5);	/* mov %rax, %fs:stack(,%r11,8) */
		emit4(&j, (unsigned int)(d->tpoff + USFT_TASK_ORIG_STACK));
		fs_incq(&j, d->tpoff + USFT_TASK_ORIG_DEPTH);
		task_exit(&j, d->tpoff);
		restore_regs(&j, &f, m);
		call_abs(&j, d->body);
		store(&j, 0, f.ret);
		/* movq %xmm0, retfp(%rbp) */
		emit(&j, "\x66\x0f\xd6\x85", 4);
		emit4(&j, (unsigned int)f.retfp);
		if (m->ret_fp) {
			emit(&j, "\x66\x0f\xd6\x85", 4);
			emit4(&j, (unsigned int)f.ret);
		}
		/* back in the tasks span before the image is let go */
		task_enter(&j, d->tpoff);
		fs_decq(&j, d->tpoff + USFT_TASK_ORIG_DEPTH);
		*ip_after_call = j.len;
		emit(&j, X86_NOP5, 5);
	}
	/* do_fexit: */
	for (size_t k = 0; k < nfix; k++)
		fix_rel32(&j, fixups[k], j.len);
	for (i = 0; i < d->nr[USFT_TRAMP_FEXIT]; i++)
		emit_prog(&j, &f, d->tpoff, &d->progs[USFT_TRAMP_FEXIT][i], false);

	*ip_epilogue = j.len;
	if (call_orig) {
		load(&j, 0, f.ret);
		if (m->ret_fp) {			/* movq ret(%rbp), %xmm0 */
			emit(&j, "\xf3\x0f\x7e\x85", 4);
			emit4(&j, (unsigned int)f.ret);
		} else {
			emit(&j, "\xf3\x0f\x7e\x85", 4);	/* xmm0 as the original left it */
			emit4(&j, (unsigned int)f.retfp);
		}
	} else {
		restore_regs(&j, &f, m);
	}
	emit1(&j, 0xc9);				/* leave */
	task_exit(&j, d->tpoff);
	if (skip_frame)
		emit(&j, "\x48\x83\xc4\x08", 4);	/* add $8, rsp */
	emit1(&j, 0xc3);				/* ret */
	emit1(&j, 0xcc);
	/* out-of-line miss paths: count the miss, go back after the callback */
	/* out of line: the first-entry registration, then back */
	fix_rel32(&j, reg_at, j.len);
	call_abs(&j, (unsigned long)usft_task_register);
	emit(&j, "\xe9", 1);				/* jmp back */
	emit4(&j, (unsigned int)(reg_back - (j.len + 4)));
	for (int k = 0; k < j.nmiss; k++) {
		fix_rel32(&j, j.miss[k].jne_at, j.len);
		emit(&j, "\x4c\x8b\x1d", 3);		/* mov misses(%rip), %r11 */
		slot_ref(&j, j.miss[k].slot);
		emit(&j, "\xf0\x49\xff\x03", 4);	/* lock incq (%r11) */
		emit(&j, "\xe9", 1);			/* jmp back */
		emit4(&j, (unsigned int)(j.miss[k].back_to - (j.len + 4)));
	}
	/* the data words, 8-aligned, and the RIP-relative fix-ups */
	while (j.len % 8)
		emit1(&j, 0xcc);
	*data_off = j.len;
	*nr_data = j.nslots;
	for (int k = 0; k < j.nslots; k++)
		emit8(&j, j.slots[k]);
	for (int k = 0; k < j.nfix && !j.overflow; k++) {
		size_t at4 = j.slot_fix[k];
		/* read from the image's data twin (ARCH_TRAMP_DATA_TWIN) */
		unsigned int rel = (unsigned int)(USFT_EXECMEM_TWIN + *data_off +
						  8 * (size_t)j.slot_idx[k] - (at4 + 4));

		memcpy(j.buf + at4, &rel, 4);
	}
	if (j.overflow)
		return -E2BIG;
	return (int)j.len;
}

/* x86-64 needs nothing arch-specific at retirement (the data words do it) */
int arch_bpf_tramp_retire(unsigned long image, size_t size)
{
	return 1;
}

int arch_bpf_tramp_skip_fexit(unsigned long ip_after_call, unsigned long ip_epilogue)
{
	unsigned char b[5];

	if (!x86_encode_branch(b, ip_after_call, ip_epilogue, true))
		return -EINVAL;
	return x86_poke_queue(ip_after_call, b, 5, false);
}

bool arch_bpf_tramp_has_jmp(void)
{
	return true;
}
