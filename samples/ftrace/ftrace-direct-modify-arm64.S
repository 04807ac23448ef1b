/* SPDX-License-Identifier: MIT */
/*
 * ftrace-direct-modify-arm64.S - the two direct trampolines of
 * ftrace-direct-modify.c, which modify_ftrace_direct() switches between.
 *
 * Entry (kernel arm64 convention): by the site's BL, or while a retarget is
 * in progress by ftrace_caller's br x17 with the same registers: x9 = the
 * return address of my_schedule() into its caller, x30 = the return into its
 * body, sp 16-byte aligned.  my_schedule() takes no arguments; x0 is kept
 * anyway, as the kernel sample does.
 */
	.text

.macro DIRECT_TRAMP name, helper
	.globl	\name
	.type	\name, %function
	.p2align 3
\name:
	.cfi_startproc
	hint	#34			/* bti c */
	stp	x29, x30, [sp, #-32]!
	.cfi_def_cfa_offset 32
	.cfi_offset x29, -32
	.cfi_offset x30, -24
	mov	x29, sp
	stp	x9, x0, [sp, #16]
	bl	\helper
	ldp	x9, x0, [sp, #16]
	ldp	x29, x30, [sp], #32
	.cfi_def_cfa_offset 0
	mov	x10, x30
	mov	x30, x9
	ret	x10
	.cfi_endproc
	.size	\name, . - \name
.endm

	DIRECT_TRAMP my_tramp1, my_direct_func1
	DIRECT_TRAMP my_tramp2, my_direct_func2

	.section .note.GNU-stack, "", %progbits
