/* SPDX-License-Identifier: MIT */
/*
 * arch/arm64/entry.S - templates of ftrace_caller (arch/arm64/kernel/
 * entry-ftrace.S, DYNAMIC_FTRACE_WITH_ARGS).  They are never executed in
 * place: the runtime copies them into trampoline memory within BL range of
 * the text they serve (one shared copy of each per window, plus per-site
 * copies for per_callsite_ops) and fills the data words at their end.
 * Every memory reference is a PC-relative literal load from the template's
 * own data, so a copy needs no relocation.
 *
 *   ftrace_caller      no CALL_OPS: the op is function_trace_op and the
 *                      callback the shared call function (through pointers
 *                      in the data words, like x86's ftrace_call).
 *   ftrace_caller_ops  CALL_OPS (-fpatchable-function-entry=4,2): the op is
 *                      the per-site literal at (x30 & ~7) - 16; a direct
 *                      op (op->direct_call != 0) is branched to at once.
 *
 * Entry (kernel convention): x9 = the traced function's return address
 * (MOV X9, X30 at the site), x30 = site + 4 (the body), sp = the
 * function's entry sp.  x9-x17 are free (AAPCS64 temporaries, dead at a
 * function's entry); x0-x8, q0-q7, x29 and x30 must reach the body intact.
 * The frame is struct __arch_ftrace_regs (usft/asm/arm64.h) plus two frame
 * records (ours, then the call site's) and one scratch word.
 *
 * Exit: ret x9 into the body with x30 = the saved return address, or, when
 * call_direct_funcs() stored fregs->direct_tramp, br x17 into that direct
 * trampoline with the entry convention above (x9 = return address,
 * x30 = body).  Re-entry into the body is never an indirect branch, so the
 * body needs no BTI landing pad.
 */
#include <usft/asm/arm64.h>
#include "asm/ftrace.h"
#include "asm/fregs.h"

#define TASK_NEST	0
#define TASK_GEN	8
#define TASK_STATE	24
#define FRAME		(USFT_FREGS_SIZE + 48)
#define REC_OURS	USFT_FREGS_SIZE
#define REC_SITE	(USFT_FREGS_SIZE + 16)
#define SCRATCH		(USFT_FREGS_SIZE + 32)

	.section .note.GNU-stack, "", %progbits
	.text

/* x10 = &usft_task of this thread (clobbers x11) */
.macro TASK_PTR tpoff
	mrs	x10, tpidr_el0
	ldr	x11, \tpoff
	add	x10, x10, x11
.endm

/* tasks-RCU entry mark (x10 = task, x12 = new nest) */
.macro TASK_MARK tpoff
	TASK_PTR \tpoff
	ldr	x12, [x10, #TASK_NEST]
	add	x12, x12, #1
	str	x12, [x10, #TASK_NEST]
.endm

/* nest--; gen++ when it reaches 0 (a quiescent point); x10 = task */
.macro TASK_UNMARK_X10
	ldr	x12, [x10, #TASK_NEST]
	subs	x12, x12, #1
	str	x12, [x10, #TASK_NEST]
	b.ne	9f
	ldr	x12, [x10, #TASK_GEN]
	add	x12, x12, #1
	str	x12, [x10, #TASK_GEN]
9:
.endm

.macro TASK_EXIT tpoff
	TASK_PTR \tpoff
	TASK_UNMARK_X10
.endm

/* first entry of this thread: register it (x10 = task; after SAVE_FRAME,
 * which leaves x10-x13 alone) */
.macro TASK_ENTER regfn
	ldr	w12, [x10, #TASK_STATE]
	cbnz	w12, 8f
	ldr	x12, \regfn
	blr	x12
8:
.endm

.macro SAVE_FRAME
	mov	x14, sp
	sub	sp, sp, #FRAME
	FREGS_SAVE_ARGS x15
	str	xzr, [sp, #USFT_FREGS_DIRECT_TRAMP]
	str	x29, [sp, #USFT_FREGS_FP]
	str	x9, [sp, #USFT_FREGS_LR]
	str	x14, [sp, #USFT_FREGS_SP]
	str	x30, [sp, #USFT_FREGS_PC]
	/* a frame record for the call site, then ours above the regs */
	stp	x29, x9, [sp, #REC_SITE]
	add	x29, sp, #REC_SITE
	stp	x29, x30, [sp, #REC_OURS]
	add	x29, sp, #REC_OURS
.endm

/* callback args other than the op: x0 = site, x1 = parent, x3 = fregs */
.macro CALLBACK_ARGS
	ldr	x0, [sp, #USFT_FREGS_PC]
	sub	x0, x0, #4
	ldr	x1, [sp, #USFT_FREGS_LR]
	mov	x3, sp
.endm

/* everything after the callback: restore, then ret x9 or br x17 */
.macro RESTORE_AND_RETURN tpoff
	TASK_EXIT \tpoff
	FREGS_RESTORE_ARGS x11
	ldr	x29, [sp, #USFT_FREGS_FP]
	/* a direct trampoline was requested by call_direct_funcs() */
	ldr	x17, [sp, #USFT_FREGS_DIRECT_TRAMP]
	cbnz	x17, 7f
	ldr	x30, [sp, #USFT_FREGS_LR]
	ldr	x9, [sp, #USFT_FREGS_PC]
	add	sp, sp, #FRAME
	ret	x9
7:
	/* the trampoline's entry convention: x9 = return address, x30 = body */
	ldr	x9, [sp, #USFT_FREGS_LR]
	ldr	x30, [sp, #USFT_FREGS_PC]
	add	sp, sp, #FRAME
	br	x17
.endm

/* ftrace_override_function_with_return() needs nothing on arm64 (pc = lr);
 * kept for the x86-64 export list */
	.balign 16
	.globl	usft_just_return
	.type	usft_just_return, %function
usft_just_return:
	hint	#34		/* bti c */
	ret
	.size	usft_just_return, . - usft_just_return

/*
 * ftrace_stub_direct_tramp: a direct trampoline that does nothing: entered
 * by BL with x30 = the function body and x9 = the caller's LR, it puts the
 * caller's LR back in x30 and continues into the body.
 */
	.balign 16
	.globl	ftrace_stub_direct_tramp
	.type	ftrace_stub_direct_tramp, %function
ftrace_stub_direct_tramp:
	hint	#34		/* bti c */
	mov	x10, x30
	mov	x30, x9
	ret	x10
	.size	ftrace_stub_direct_tramp, . - ftrace_stub_direct_tramp

/* ------------------------------------------------------------------ */
	.balign 16
	.globl	ftrace_caller
	.type	ftrace_caller, %function
	/* no WITH_REGS on arm64: FTRACE_REGS_ADDR == FTRACE_ADDR */
	.globl	ftrace_regs_caller
	.type	ftrace_regs_caller, %function
ftrace_caller:
ftrace_regs_caller:
	hint	#34		/* bti c */
	TASK_MARK .Lc_tpoff
	SAVE_FRAME
	TASK_ENTER .Lc_regfn
	CALLBACK_ARGS
	ldr	x2, .Lc_opp
	ldr	x2, [x2]			/* op */
	.globl	ftrace_call
ftrace_call:
	ldr	x4, .Lc_funcp
	ldr	x4, [x4]			/* the call function */
	blr	x4
	RESTORE_AND_RETURN .Lc_tpoff
	.balign 8
	.globl	ftrace_caller_data
ftrace_caller_data:
.Lc_tpoff:	.quad 0		/* TLS offset of usft_task */
.Lc_regfn:	.quad 0		/* &usft_task_register */
.Lc_opp:	.quad 0		/* &word holding the op */
.Lc_funcp:	.quad 0		/* &word holding the callback */
.Lc_opv:	.quad 0		/* per-callsite copies: the op */
.Lc_funcv:	.quad 0		/* per-callsite copies: the callback */
	.globl	ftrace_caller_end
ftrace_caller_end:
	.size	ftrace_caller, . - ftrace_caller
	.size	ftrace_regs_caller, . - ftrace_regs_caller

/* ------------------------------------------------------------------ */
	.balign 16
	.globl	ftrace_caller_ops
	.type	ftrace_caller_ops, %function
ftrace_caller_ops:
	hint	#34		/* bti c */
	TASK_MARK .Lo_tpoff
	/*
	 * The literal is 8-byte aligned, 12 or 16 bytes before the BL: x30
	 * is literal + 16 or + 20, so align down and subtract 16.
	 */
	bic	x11, x30, #7
	ldr	x11, [x11, #-16]		/* op */
	ldr	x17, [x11, #USFT_OPS_DIRECT_CALL]
	cbnz	x17, .Lo_direct
	SAVE_FRAME
	str	x11, [sp, #SCRATCH]
	TASK_ENTER .Lo_regfn
	CALLBACK_ARGS
	ldr	x2, [sp, #SCRATCH]		/* op */
	ldr	x4, [x2, #USFT_OPS_FUNC]	/* op->func */
	blr	x4
	RESTORE_AND_RETURN .Lo_tpoff
.Lo_direct:
	/*
	 * Direct fast path (kernel ftrace_caller_direct): nothing saved;
	 * leave the tasks span and branch with x9/x30 as they came.  BR X17
	 * may land on a BTI C or PACIASP.  A jmp-marked address (bit 0,
	 * ftrace_jmp_set()) is called like any other on arm64: drop the bit.
	 */
	TASK_UNMARK_X10
	and	x17, x17, #~1
	br	x17
	.balign 8
	.globl	ftrace_caller_ops_data
ftrace_caller_ops_data:
.Lo_tpoff:	.quad 0
.Lo_regfn:	.quad 0
	.globl	ftrace_caller_ops_end
ftrace_caller_ops_end:
	.size	ftrace_caller_ops, . - ftrace_caller_ops
