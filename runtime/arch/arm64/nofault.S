/* SPDX-License-Identifier: MIT */
/*
 * arch/arm64/nofault.S - the copy behind strncpy_from_user_nofault()
 * (core/nofault.c), the kernel's exception-table idea (arch/arm64/mm/
 * extable.c): the one load that may fault is at usft_nofault_load, and
 * usft's SIGSEGV/SIGBUS handler resumes a fault there at
 * usft_nofault_fixup.  Nothing else runs these instructions.
 *
 * long usft_nofault_strncpy(char *dst, const char *src, long count)
 *   count > 0.  Copies up to @count bytes, stopping after a NUL.
 *   Return: bytes copied (the NUL included), or -1 - bytes copied when a
 *   load faulted.
 */
	.section .note.GNU-stack, "", %progbits
	.text
	.globl	usft_nofault_strncpy
	.hidden	usft_nofault_strncpy
	.type	usft_nofault_strncpy, %function
	.globl	usft_nofault_load
	.hidden	usft_nofault_load
	.globl	usft_nofault_fixup
	.hidden	usft_nofault_fixup
	.p2align 2
usft_nofault_strncpy:
	hint	#34		/* bti c */
	mov	x3, #0
1:
usft_nofault_load:
	ldrb	w4, [x1, x3]
	strb	w4, [x0, x3]
	add	x3, x3, #1
	cbz	w4, 2f
	cmp	x3, x2
	b.lo	1b
2:	mov	x0, x3
	ret
usft_nofault_fixup:
	mvn	x0, x3		/* -1 - bytes copied */
	ret
	.size	usft_nofault_strncpy, . - usft_nofault_strncpy
