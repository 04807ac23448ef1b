/* SPDX-License-Identifier: MIT */
/*
 * ftrace-direct-arm64.S - the direct trampoline of ftrace-direct.c.
 *
 * Entered by the BL at the patch site of my_wake_up() (or by ftrace_caller's
 * br x17 when the site is out of BL range), with the kernel's arm64
 * convention: x9 = my_wake_up()'s return address into its caller (the
 * site's MOV X9, X30), x30 = the return into its body (site + 4), sp = the
 * function's entry sp (16-byte aligned).  x9-x17 are free, x0-x8 hold the
 * arguments.  The trampoline keeps the task argument across the C helper
 * and returns into the body with x30 = the caller's return address again.
 */
	.text
	.globl	my_tramp
	.type	my_tramp, %function
	.p2align 3
my_tramp:
	.cfi_startproc
	hint	#34			/* bti c: reached by BL or BR */
	stp	x29, x30, [sp, #-32]!	/* a frame record: x30 = the body */
	.cfi_def_cfa_offset 32
	.cfi_offset x29, -32
	.cfi_offset x30, -24
	mov	x29, sp
	stp	x9, x0, [sp, #16]	/* the return address, struct task * */
	bl	my_direct_func		/* my_direct_func(t) */
	ldp	x9, x0, [sp, #16]
	ldp	x29, x30, [sp], #32
	.cfi_def_cfa_offset 0
	/* into the body with x30 = the caller's return address */
	mov	x10, x30
	mov	x30, x9
	ret	x10
	.cfi_endproc
	.size	my_tramp, . - my_tramp

	.section .note.GNU-stack, "", %progbits
