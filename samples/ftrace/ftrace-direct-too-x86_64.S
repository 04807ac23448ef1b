/* SPDX-License-Identifier: MIT */
/*
 * ftrace-direct-too-x86_64.S - the direct trampolines of ftrace-direct-too.c.
 *
 * Call mode (docs/architecture.md): entered by the call at the patch site, [rsp] = return
 * address into the traced function's body, rsp 16-byte aligned on entry.
 * Each trampoline saves the argument registers its function uses, hands them
 * unchanged to its C helper (they are still in place: the helper takes the
 * same arguments) and restores them before returning into the body.
 */
	.text

/* my_handle_mm_fault(vma, address, flags, regs): rdi, rsi, rdx, rcx */
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
	subq	$8, %rsp		/* rbp + 4 pushes: realign to 16 */
	call	my_direct_func		/* my_direct_func(vma, address, flags, regs) */
	addq	$8, %rsp
	popq	%rcx
	popq	%rdx
	popq	%rsi
	popq	%rdi
	leave
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size	my_tramp, . - my_tramp

/* my_do_mmap(addr, len, prot, flags, fd, pgoff): all six argument registers */
	.globl	my_tramp2
	.type	my_tramp2, @function
	.p2align 4
my_tramp2:
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
	call	my_direct_func2
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
	.size	my_tramp2, . - my_tramp2

	.section .note.GNU-stack, "", @progbits
