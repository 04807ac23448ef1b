/* SPDX-License-Identifier: MIT */
/*
 * ftrace-direct-multi-modify-arm64.S - the two direct trampolines of
 * ftrace-direct-multi-modify.c, which modify_ftrace_direct() moves every
 * filtered site between.
 *
 * Entry (kernel arm64 convention): by a site's BL, or while a retarget is in
 * progress by ftrace_caller's br x17 with the same registers: x9 = the
 * traced function's return address into its caller, x30 = site + 4 of
 * whichever function fired, sp 16-byte aligned.  Every argument register
 * (x0-x8) is kept, and x30 is the helper's only argument.
 */
	.text

.macro DIRECT_MULTI_TRAMP name, helper
	.globl	\name
	.type	\name, %function
	.p2align 3
\name:
	.cfi_startproc
	hint	#34			/* bti c */
	stp	x29, x30, [sp, #-96]!
	.cfi_def_cfa_offset 96
	.cfi_offset x29, -96
	.cfi_offset x30, -88
	mov	x29, sp
	stp	x0, x1, [sp, #16]
	stp	x2, x3, [sp, #32]
	stp	x4, x5, [sp, #48]
	stp	x6, x7, [sp, #64]
	stp	x8, x9, [sp, #80]
	mov	x0, x30			/* return into the body = site + 4 */
	bl	\helper
	ldp	x8, x9, [sp, #80]
	ldp	x6, x7, [sp, #64]
	ldp	x4, x5, [sp, #48]
	ldp	x2, x3, [sp, #32]
	ldp	x0, x1, [sp, #16]
	ldp	x29, x30, [sp], #96
	.cfi_def_cfa_offset 0
	mov	x10, x30
	mov	x30, x9
	ret	x10
	.cfi_endproc
	.size	\name, . - \name
.endm

	DIRECT_MULTI_TRAMP my_tramp1, my_direct_func1
	DIRECT_MULTI_TRAMP my_tramp2, my_direct_func2

	.section .note.GNU-stack, "", %progbits
