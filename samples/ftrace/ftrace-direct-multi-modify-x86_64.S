/* SPDX-License-Identifier: MIT */
/*
 * ftrace-direct-multi-modify-x86_64.S - the two direct trampolines of
 * ftrace-direct-multi-modify.c, which modify_ftrace_direct() moves every
 * filtered site between.
 *
 * Call mode (docs/architecture.md): entered by the call at a patch site (or, while a
 * retarget is in progress, by ftrace_regs_caller's return into it, which
 * leaves the same stack): [rsp] = site + 5 of whichever function fired, rsp
 * 16-byte aligned.  All six integer argument registers are kept, and the
 * return address is the helper's only argument.
 */
	.text

.macro DIRECT_MULTI_TRAMP name, helper
	.globl	\name
	.type	\name, @function
	.p2align 4
\name:
	.cfi_startproc
	endbr64
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	pushq	%rdi
	pushq	%rsi
	pushq	%rdx
	pushq	%rcx
	pushq	%r8
	pushq	%r9
	subq	$8, %rsp		/* rbp + 6 pushes: realign to 16 */
	movq	8(%rbp), %rdi		/* return address into the body = site + 5 */
	call	\helper
	addq	$8, %rsp
	popq	%r9
	popq	%r8
	popq	%rcx
	popq	%rdx
	popq	%rsi
	popq	%rdi
	leave
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size	\name, . - \name
.endm

	DIRECT_MULTI_TRAMP my_tramp1, my_direct_func1
	DIRECT_MULTI_TRAMP my_tramp2, my_direct_func2

	.section .note.GNU-stack, "", @progbits
