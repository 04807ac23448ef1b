/* SPDX-License-Identifier: MIT */
/*
 * arch/x86_64/fgraph_entry.S - return_to_handler (arch/x86/kernel/ftrace_64.S).
 *
 * The function graph entry hook (core/fgraph.c) replaced the traced
 * function's return address with this.  Entered by that function's `ret`:
 *   rsp = the return slot + 8 (the caller's stack pointer after the call),
 *   rax, rdx, xmm0, xmm1 = the return value (x87 st0 is never touched by the
 *   C part, so long double returns pass through too).
 * Builds a struct __arch_ftrace_regs with ax, dx, xmm0/1, bp and sp so the
 * return callbacks can read the return value through the ftrace_regs
 * accessors, asks fgraph_return_to_handler() for the real return address,
 * restores the return registers and jumps there.
 *
 * CFI: an unwinder that finds return_to_handler as a return address looks
 * up the byte before it (return address - 1), so the FDE starts one NOP
 * early; the return address is marked undefined, which ends a backtrace
 * cleanly here instead of walking into garbage.  Real unwinding needs the
 * real addresses (ftrace_graph_ret_addr(), usft_fgraph_unwind_begin()).
 */
#include <usft/asm/x86_64.h>

#define FRAME	USFT_FREGS_SIZE		/* 304 = 19 * 16 */
#define XMM0	USFT_FREGS_XMM
#define XMM1	(USFT_FREGS_XMM + 16)

	.section .note.GNU-stack, "", @progbits
	.text

	.balign 16
	.globl	return_to_handler
	.hidden	return_to_handler
	.type	return_to_handler, @function
	.cfi_startproc
	.cfi_undefined rip
	nop
return_to_handler:
	subq	$FRAME, %rsp
	.cfi_adjust_cfa_offset FRAME
	movq	%rax, USFT_PTREGS_AX(%rsp)
	movq	%rdx, USFT_PTREGS_DX(%rsp)
	movq	%rbp, USFT_PTREGS_BP(%rsp)
	movups	%xmm0, XMM0(%rsp)		/* unaligned form: hand-written callers */
	movups	%xmm1, XMM1(%rsp)
	leaq	FRAME(%rsp), %rdi
	movq	%rdi, USFT_PTREGS_SP(%rsp)
	movq	$0, USFT_PTREGS_CS(%rsp)	/* not a full pt_regs */
	movq	$0, USFT_PTREGS_IP(%rsp)
	movq	%rsp, %rdi
	/*
	 * gcc's -fipa-stack-alignment calls local functions with rsp only
	 * 8-aligned, so the traced function may have returned to us that
	 * way: align for the C part (rbp is callee-saved there).
	 */
	movq	%rsp, %rbp
	andq	$-16, %rsp
	call	fgraph_return_to_handler
	movq	%rbp, %rsp
	movq	%rax, %r11			/* the real return address */
	movups	XMM1(%rsp), %xmm1
	movups	XMM0(%rsp), %xmm0
	movq	USFT_PTREGS_BP(%rsp), %rbp
	movq	USFT_PTREGS_DX(%rsp), %rdx
	movq	USFT_PTREGS_AX(%rsp), %rax
	addq	$FRAME, %rsp
	.cfi_adjust_cfa_offset -FRAME
	jmp	*%r11
	int3
	.cfi_endproc
	.size	return_to_handler, . - return_to_handler
