/* SPDX-License-Identifier: MIT */
/*
 * arch/x86_64/nofault.S - the copy behind strncpy_from_user_nofault()
 * (core/nofault.c), the kernel's exception-table idea (arch/x86/mm/
 * extable.c): the one load that may fault is at usft_nofault_load, and
 * usft's SIGSEGV/SIGBUS handler resumes a fault there at
 * usft_nofault_fixup.  Nothing else runs these instructions.
 *
 * long usft_nofault_strncpy(char *dst, const char *src, long count)
 *   count > 0.  Copies up to @count bytes, stopping after a NUL.
 *   Return: bytes copied (the NUL included), or -1 - bytes copied when a
 *   load faulted.
 */
	.section .note.GNU-stack, "", @progbits
	.text
	.globl	usft_nofault_strncpy
	.hidden	usft_nofault_strncpy
	.type	usft_nofault_strncpy, @function
	.globl	usft_nofault_load
	.hidden	usft_nofault_load
	.globl	usft_nofault_fixup
	.hidden	usft_nofault_fixup
usft_nofault_strncpy:
	xorl	%eax, %eax
1:
usft_nofault_load:
	movzbl	(%rsi,%rax), %ecx
	movb	%cl, (%rdi,%rax)
	incq	%rax
	testb	%cl, %cl
	jz	2f
	cmpq	%rdx, %rax
	jb	1b
2:	ret
usft_nofault_fixup:
	notq	%rax		/* -1 - bytes copied */
	ret
	.size	usft_nofault_strncpy, . - usft_nofault_strncpy
