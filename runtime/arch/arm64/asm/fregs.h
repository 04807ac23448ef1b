/* SPDX-License-Identifier: MIT */
/*
 * arch/arm64/asm/fregs.h - assembler macros shared by ftrace_caller
 * (entry.S) and return_to_handler (fgraph_entry.S): the argument and
 * return registers in and out of a struct __arch_ftrace_regs at sp
 * (usft/asm/arm64.h offsets).  @tmp is a scratch register for the q block.
 */
#ifndef USFT_ARM64_ASM_FREGS_H
#define USFT_ARM64_ASM_FREGS_H

#include <usft/asm/arm64.h>

/* x0-x8 and q0-q7 into the ftrace_regs at sp */
.macro FREGS_SAVE_ARGS tmp
	stp	x0, x1, [sp, #USFT_FREGS_X0]
	stp	x2, x3, [sp, #USFT_FREGS_X2]
	stp	x4, x5, [sp, #USFT_FREGS_X4]
	stp	x6, x7, [sp, #USFT_FREGS_X6]
	str	x8, [sp, #USFT_FREGS_X8]
	add	\tmp, sp, #USFT_FREGS_Q0
	stp	q0, q1, [\tmp, #0]
	stp	q2, q3, [\tmp, #32]
	stp	q4, q5, [\tmp, #64]
	stp	q6, q7, [\tmp, #96]
.endm

/* q0-q7 and x0-x8 back from the ftrace_regs at sp */
.macro FREGS_RESTORE_ARGS tmp
	add	\tmp, sp, #USFT_FREGS_Q0
	ldp	q0, q1, [\tmp, #0]
	ldp	q2, q3, [\tmp, #32]
	ldp	q4, q5, [\tmp, #64]
	ldp	q6, q7, [\tmp, #96]
	ldp	x0, x1, [sp, #USFT_FREGS_X0]
	ldp	x2, x3, [sp, #USFT_FREGS_X2]
	ldp	x4, x5, [sp, #USFT_FREGS_X4]
	ldp	x6, x7, [sp, #USFT_FREGS_X6]
	ldr	x8, [sp, #USFT_FREGS_X8]
.endm

#endif
