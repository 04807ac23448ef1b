/* SPDX-License-Identifier: MIT */
/*
 * arch/x86_64/asm/entry.h - assembler macros shared by entry.S (the caller
 * templates) and fgraph_entry.S (return_to_handler and the graph jmp
 * caller): the struct __arch_ftrace_regs frame and the usft_task offsets.
 * Assembly only.
 */
#ifndef USFT_X86_64_ASM_ENTRY_H
#define USFT_X86_64_ASM_ENTRY_H

#include <usft/asm/x86_64.h>

#define TASK_STATE	24
#define TASK_SPAN_IN	184	/* USFT_TASK_SPAN_* (core/internal.h) */
#define TASK_SPAN_OUT	192
#define TASK_SPAN_GEN	200
#define FRAME		USFT_FREGS_SIZE

/*
 * The tasks-RCU span (struct usft_task span_*): one increment to enter; to
 * leave, one increment and, if that closed the outermost level, a bump of
 * span_gen.  \task holds usft_task's TLS offset, \tmp is free.
 */
.macro SPAN_ENTER task
	incq	%fs:TASK_SPAN_IN(\task)
.endm

.macro SPAN_EXIT task, tmp
	incq	%fs:TASK_SPAN_OUT(\task)
	movq	%fs:TASK_SPAN_IN(\task), \tmp
	cmpq	%fs:TASK_SPAN_OUT(\task), \tmp
	jne	9f
	incq	%fs:TASK_SPAN_GEN(\task)
9:
.endm

.macro SAVE_GPRS
	movq	%rax, USFT_PTREGS_AX(%rsp)
	movq	%rcx, USFT_PTREGS_CX(%rsp)
	movq	%rdx, USFT_PTREGS_DX(%rsp)
	movq	%rsi, USFT_PTREGS_SI(%rsp)
	movq	%rdi, USFT_PTREGS_DI(%rsp)
	movq	%r8, USFT_PTREGS_R8(%rsp)
	movq	%r9, USFT_PTREGS_R9(%rsp)
	movq	%r10, USFT_PTREGS_R10(%rsp)
	movq	%rbp, USFT_PTREGS_BP(%rsp)
.endm

/* rax is free once SAVE_GPRS has run */
.macro SAVE_XMM
	/*
	 * movups: the frame is 16-aligned only if the traced function was
	 * entered with an ABI-aligned stack, and gcc's -fipa-stack-alignment
	 * (on at -O2) calls local functions that need no alignment without it.
	 */
	leaq	USFT_FREGS_XMM(%rsp), %rax	/* short displacements below */
	movups	%xmm0, 0x00(%rax)
	movups	%xmm1, 0x10(%rax)
	movups	%xmm2, 0x20(%rax)
	movups	%xmm3, 0x30(%rax)
	movups	%xmm4, 0x40(%rax)
	movups	%xmm5, 0x50(%rax)
	movups	%xmm6, 0x60(%rax)
	movups	%xmm7, 0x70(%rax)
.endm

.macro SAVE_ARGS
	SAVE_GPRS
	SAVE_XMM
.endm

.macro RESTORE_XMM
	leaq	USFT_FREGS_XMM(%rsp), %rcx	/* rcx is restored after */
	movups	0x00(%rcx), %xmm0
	movups	0x10(%rcx), %xmm1
	movups	0x20(%rcx), %xmm2
	movups	0x30(%rcx), %xmm3
	movups	0x40(%rcx), %xmm4
	movups	0x50(%rcx), %xmm5
	movups	0x60(%rcx), %xmm6
	movups	0x70(%rcx), %xmm7
.endm

.macro RESTORE_GPRS
	movq	USFT_PTREGS_BP(%rsp), %rbp
	movq	USFT_PTREGS_R10(%rsp), %r10
	movq	USFT_PTREGS_R9(%rsp), %r9
	movq	USFT_PTREGS_R8(%rsp), %r8
	movq	USFT_PTREGS_DI(%rsp), %rdi
	movq	USFT_PTREGS_SI(%rsp), %rsi
	movq	USFT_PTREGS_DX(%rsp), %rdx
	movq	USFT_PTREGS_CX(%rsp), %rcx
	movq	USFT_PTREGS_AX(%rsp), %rax
.endm

.macro RESTORE_ARGS
	RESTORE_XMM
	RESTORE_GPRS
.endm

#endif /* USFT_X86_64_ASM_ENTRY_H */
