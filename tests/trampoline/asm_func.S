/* SPDX-License-Identifier: MIT */
/*
 * Functions with a site but no DWARF (this file is assembled with -g0):
 * usft_tramp_attach() with nr_args -1 must fail with ENOENT, an explicit
 * nr_args works.  The site table entry is what gcc emits for
 * -fpatchable-function-entry (a __patchable_function_entries record with
 * SHF_LINK_ORDER to the function's section).
 */
	.section .note.GNU-stack, "", @progbits

	.text
	.p2align 4
	.globl	tr_asm_add3
	.type	tr_asm_add3, @function
tr_asm_add3:				/* long tr_asm_add3(long x): x + 3 */
.Ltr_asm_add3_site:
	.byte	0x0f, 0x1f, 0x44, 0x00, 0x00
	leaq	3(%rdi), %rax
	ret
	.size	tr_asm_add3, . - tr_asm_add3

	.p2align 4
	.globl	tr_asm_sub
	.type	tr_asm_sub, @function
tr_asm_sub:				/* long tr_asm_sub(long a, long b): a - b */
.Ltr_asm_sub_site:
	.byte	0x90, 0x90, 0x90, 0x90, 0x90
	movq	%rdi, %rax
	subq	%rsi, %rax
	ret
	.size	tr_asm_sub, . - tr_asm_sub

	.section __patchable_function_entries, "awo", @progbits, tr_asm_add3
	.p2align 3
	.quad	.Ltr_asm_add3_site
	.quad	.Ltr_asm_sub_site
