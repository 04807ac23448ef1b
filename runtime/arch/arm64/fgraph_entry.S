/* SPDX-License-Identifier: MIT */
/*
 * arch/arm64/fgraph_entry.S - return_to_handler (arch/arm64/kernel/
 * entry-ftrace.S).
 *
 * The function graph entry hook (core/fgraph.c) replaced the traced
 * function's return address in fregs->lr, which ftrace_caller puts back
 * into x30: the function runs with x30 = return_to_handler and its `ret`
 * lands here with sp = its entry sp (the frame identity,
 * arch_fgraph_return_id()) and the return value in x0-x7 / q0-q7 (x0-x1
 * for integers and pairs, v0-v3 for floating-point aggregates; the kernel
 * saves x0-x7, usft also q0-q7 for double returns).  x8 (indirect result)
 * and x29 are kept too.  Builds a struct __arch_ftrace_regs so the return
 * callbacks read the return value through the ftrace_regs accessors, asks
 * fgraph_return_to_handler() for the real return address, restores and
 * returns there with x30 = that address.  Reached by RET only: no BTI
 * landing pad needed.
 *
 * CFI: x30 is marked undefined, which ends a backtrace cleanly here; the
 * frame record this builds holds lr = 0 for frame-pointer walkers.  Real
 * unwinding needs the real addresses (ftrace_graph_ret_addr(),
 * usft_fgraph_unwind_begin()).
 */
#include <usft/asm/arm64.h>
#include "asm/fregs.h"

#define FRAME	(USFT_FREGS_SIZE + 16)	/* the regs, then a frame record */
#define REC	USFT_FREGS_SIZE

	.section .note.GNU-stack, "", %progbits
	.text

	.balign 16
	.globl	return_to_handler
	.hidden	return_to_handler
	.type	return_to_handler, %function
	.cfi_startproc
	.cfi_undefined x30
	/* an unwinder looks up return address - 4: keep the FDE around it */
	nop
return_to_handler:
	sub	sp, sp, #FRAME
	.cfi_adjust_cfa_offset FRAME
	FREGS_SAVE_ARGS x9
	str	xzr, [sp, #USFT_FREGS_DIRECT_TRAMP]
	str	x29, [sp, #USFT_FREGS_FP]
	str	xzr, [sp, #USFT_FREGS_LR]
	add	x9, sp, #FRAME
	str	x9, [sp, #USFT_FREGS_SP]
	str	xzr, [sp, #USFT_FREGS_PC]
	stp	x29, xzr, [sp, #REC]
	add	x29, sp, #REC
	mov	x0, sp
	bl	fgraph_return_to_handler
	mov	x30, x0				/* the real return address */
	FREGS_RESTORE_ARGS x9
	ldr	x29, [sp, #USFT_FREGS_FP]
	add	sp, sp, #FRAME
	.cfi_adjust_cfa_offset -FRAME
	ret
	brk	#0
	.cfi_endproc
	.size	return_to_handler, . - return_to_handler
