/* SPDX-License-Identifier: MIT */
/*
 * ftrace-direct-multi-x86_64.S - the one direct trampoline of
 * ftrace-direct-multi.c, shared by every function the ops filters.
 *
 * Call mode (docs/architecture.md): [rsp] = return address into the body of whichever
 * function fired, i.e. its site + 5, rsp 16-byte aligned on entry.  The
 * trampoline does not know the function's prototype, so it keeps all six
 * integer argument registers, and hands that return address (8(%rbp) once
 * the frame is set up) to the helper as its only argument.
 */
	.text
	.globl	my_tramp
	.type	my_tramp, @function
	.p2align 4
my_tramp:
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
	call	my_direct_func		/* my_direct_func(ret) */
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
	.size	my_tramp, . - my_tramp

	.section .note.GNU-stack, "", @progbits
