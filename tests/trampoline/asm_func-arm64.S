/* SPDX-License-Identifier: MIT */
/*
 * arm64 version of asm_func.S: functions with a site but no DWARF (this
 * file is assembled with -g0): usft_tramp_attach() with nr_args -1 must
 * fail with ENOENT, an explicit nr_args works.  Each site is what gcc emits
 * for -fpatchable-function-entry=2: two NOPs at the entry and a
 * __patchable_function_entries record (SHF_LINK_ORDER to the function's
 * section) pointing at the first.
 */
	.section .note.GNU-stack, "", %progbits

	.text
	.p2align 3
	.globl	tr_asm_add3
	.type	tr_asm_add3, %function
tr_asm_add3:				/* long tr_asm_add3(long x): x + 3 */
.Ltr_asm_add3_site:
	nop
	nop
	add	x0, x0, #3
	ret
	.size	tr_asm_add3, . - tr_asm_add3

	.p2align 3
	.globl	tr_asm_sub
	.type	tr_asm_sub, %function
tr_asm_sub:				/* long tr_asm_sub(long a, long b): a - b */
.Ltr_asm_sub_site:
	nop
	nop
	sub	x0, x0, x1
	ret
	.size	tr_asm_sub, . - tr_asm_sub

	.section __patchable_function_entries, "awo", %progbits, tr_asm_add3
	.p2align 3
	.quad	.Ltr_asm_add3_site
	.quad	.Ltr_asm_sub_site
