/* SPDX-License-Identifier: MIT */
/*
 * ftrace-direct-x86_64.S - the direct trampoline of ftrace-direct.c.
 *
 * Call mode (docs/architecture.md): entered by the 5-byte call at the patch site of
 * my_wake_up(), so [rsp] is the return address into its body (site + 5) and
 * [rsp + 8] the return address into its caller.  The stack is 16-byte
 * aligned on entry (the caller's call plus the site's call).  The argument
 * register is saved around the C helper and the trampoline returns into the
 * body with everything the body needs intact.
 */
	.text
	.globl	my_tramp
	.type	my_tramp, @function
	.p2align 4
my_tramp:
	.cfi_startproc
	endbr64				/* harmless without IBT */
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	pushq	%rdi			/* struct task *; rsp is 16-aligned again */
	call	my_direct_func		/* my_direct_func(t) */
	popq	%rdi
	leave
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size	my_tramp, . - my_tramp

	.section .note.GNU-stack, "", @progbits
