/* SPDX-License-Identifier: MIT */
/*
 * ftrace-direct-multi-arm64.S - the one direct trampoline of
 * ftrace-direct-multi.c, shared by every function the ops filters.
 *
 * Entry (kernel arm64 convention): x9 = the traced function's return address
 * into its caller, x30 = the return into the body of whichever function
 * fired (its site + 4), sp 16-byte aligned.  The trampoline does not know
 * the function's prototype, so it keeps every argument register (x0-x7 and
 * x8, the indirect result pointer) and hands x30 to the helper as its only
 * argument.
 */
	.text
	.globl	my_tramp
	.type	my_tramp, %function
	.p2align 3
my_tramp:
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
	bl	my_direct_func		/* my_direct_func(ret) */
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
	.size	my_tramp, . - my_tramp

	.section .note.GNU-stack, "", %progbits
