/* SPDX-License-Identifier: MIT */
/*
 * ftrace-direct-modify-x86_64.S - the two direct trampolines of
 * ftrace-direct-modify.c, which modify_ftrace_direct() switches between.
 *
 * Call mode (docs/architecture.md): entered by the call at the patch site (or, while a
 * retarget is in progress, by ftrace_regs_caller's return into it, which
 * leaves the same stack): [rsp] = return address into the body of
 * my_schedule(), rsp 16-byte aligned.  my_schedule() takes no arguments;
 * rdi is kept anyway, as the kernel sample does.
 */
	.text

.macro DIRECT_TRAMP name, helper
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
	pushq	%rdi			/* rsp 16-aligned again */
	call	\helper
	popq	%rdi
	leave
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size	\name, . - \name
.endm

	DIRECT_TRAMP my_tramp1, my_direct_func1
	DIRECT_TRAMP my_tramp2, my_direct_func2

	.section .note.GNU-stack, "", @progbits
