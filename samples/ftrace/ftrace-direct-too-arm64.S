/* SPDX-License-Identifier: MIT */
/*
 * ftrace-direct-too-arm64.S - the direct trampolines of ftrace-direct-too.c.
 *
 * Entry (kernel arm64 convention): x9 = the traced function's return address
 * into its caller, x30 = the return into its body (site + 4), sp 16-byte
 * aligned, the arguments in x0-x7.  Each trampoline saves the argument
 * registers its function uses, hands them unchanged to its C helper (they
 * are still in place: the helper takes the same arguments), restores them
 * and returns into the body with x30 = the caller's return address.
 */
	.text

/* my_handle_mm_fault(vma, address, flags, regs): x0-x3 */
	.globl	my_tramp
	.type	my_tramp, %function
	.p2align 3
my_tramp:
	.cfi_startproc
	hint	#34			/* bti c */
	stp	x29, x30, [sp, #-64]!
	.cfi_def_cfa_offset 64
	.cfi_offset x29, -64
	.cfi_offset x30, -56
	mov	x29, sp
	stp	x0, x1, [sp, #16]
	stp	x2, x3, [sp, #32]
	str	x9, [sp, #48]		/* the return address into the caller */
	bl	my_direct_func		/* my_direct_func(vma, address, flags, regs) */
	ldr	x9, [sp, #48]
	ldp	x2, x3, [sp, #32]
	ldp	x0, x1, [sp, #16]
	ldp	x29, x30, [sp], #64
	.cfi_def_cfa_offset 0
	mov	x10, x30
	mov	x30, x9
	ret	x10
	.cfi_endproc
	.size	my_tramp, . - my_tramp

/* my_do_mmap(addr, len, prot, flags, fd, pgoff): x0-x5 */
	.globl	my_tramp2
	.type	my_tramp2, %function
	.p2align 3
my_tramp2:
	.cfi_startproc
	hint	#34			/* bti c */
	stp	x29, x30, [sp, #-80]!
	.cfi_def_cfa_offset 80
	.cfi_offset x29, -80
	.cfi_offset x30, -72
	mov	x29, sp
	stp	x0, x1, [sp, #16]
	stp	x2, x3, [sp, #32]
	stp	x4, x5, [sp, #48]
	str	x9, [sp, #64]
	bl	my_direct_func2		/* my_direct_func2(addr, len, prot, flags, fd, pgoff) */
	ldr	x9, [sp, #64]
	ldp	x4, x5, [sp, #48]
	ldp	x2, x3, [sp, #32]
	ldp	x0, x1, [sp, #16]
	ldp	x29, x30, [sp], #80
	.cfi_def_cfa_offset 0
	mov	x10, x30
	mov	x30, x9
	ret	x10
	.cfi_endproc
	.size	my_tramp2, . - my_tramp2

	.section .note.GNU-stack, "", %progbits
