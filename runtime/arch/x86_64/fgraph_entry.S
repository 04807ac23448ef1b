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
#include "asm/entry.h"

#define XMM0	USFT_FREGS_XMM
#define XMM1	(USFT_FREGS_XMM + 16)

	.section .note.GNU-stack, "", @progbits
	.text

/*
 * The return work: rsp = the return slot + 8, the return value in rax,
 * rdx, xmm0, xmm1.  Leaves the real return address in r11, everything
 * else as the traced function returned it.
 */
.macro GRAPH_RETURN
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
.endm

	.balign 16
	.globl	return_to_handler
	.hidden	return_to_handler
	.type	return_to_handler, @function
	.cfi_startproc
	.cfi_undefined rip
	nop
return_to_handler:
	GRAPH_RETURN
	jmp	*%r11
	int3
	.cfi_endproc
	.size	return_to_handler, . - return_to_handler

/*
 * Graph jmp mode (option graph_jmp, x86-64; docs/tracers.md): a site whose
 * only ops is a function graph ops jumps, instead of calling, to its own
 * small stub (a copy of ftrace_graph_stub made by arch/x86_64/ftrace.c),
 * which enters ftrace_graph_jmp_caller.  When the entry callback hooked
 * the return, the caller takes the return address off the stack (the
 * shadow stack has it) and calls the function body itself, so the body
 * returns to ftrace_graph_jmp_ret as the return stack buffer predicts, and
 * ftrace_graph_jmp_ret returns to the real caller the same way: calls and
 * returns stay paired (the RSB argument of the seed-002 thread, applied to
 * return hooking).  Otherwise it jumps to the body like return_to_handler
 * never existed.  The stack the body sees is the one the site saw: the
 * return slot now holds ftrace_graph_jmp_ret instead of return_to_handler.
 */
#define GS_TPOFF	0	/* the stub's data words */
#define GS_REGFN	8
#define GS_CALLER	16
#define GS_IP		24
#define GS_OPS		32
#define GS_FUNC		40
/* the frame plus a pad word: 16-aligned when the site's rsp is 8 mod 16 (the ABI's) */
#define GJ_FRAME	(FRAME + 8)
#define GJ_DATA		USFT_PTREGS_R14	/* frame words an args frame leaves free */
#define GJ_BEFORE	USFT_PTREGS_R15

/*
 * The per-site stub template, never executed in place.  Its first two
 * instructions enter the tasks-RCU reader section, so nothing after them
 * reads stub memory outside one (a thread before them is seen by the
 * reclaim scan: its pc is in trampoline memory).  A copy reads its data
 * words from its data twin (mem/execmem.h): arch/x86_64/ftrace.c moves
 * both RIP-relative references there (byte layout checked there:
 * 4c 8b 1d <disp32> at the start, 4c 8d 1d <disp32> at
 * ftrace_graph_stub_lea).
 */
	.balign 8
	.globl	ftrace_graph_stub
	.hidden	ftrace_graph_stub
	.type	ftrace_graph_stub, @function
ftrace_graph_stub:
	movq	ftrace_graph_stub_data(%rip), %r11
	SPAN_ENTER %r11
	.globl	ftrace_graph_stub_lea
	.hidden	ftrace_graph_stub_lea
ftrace_graph_stub_lea:
	leaq	ftrace_graph_stub_data(%rip), %r11
	jmp	*GS_CALLER(%r11)
	int3
	.balign 8
	.globl	ftrace_graph_stub_data
	.hidden	ftrace_graph_stub_data
ftrace_graph_stub_data:
	.quad	0, 0, 0, 0, 0, 0	/* tpoff, regfn, caller, ip, ops, func */
	.globl	ftrace_graph_stub_end
	.hidden	ftrace_graph_stub_end
ftrace_graph_stub_end:
	.size	ftrace_graph_stub, . - ftrace_graph_stub

/*
 * Entry: [rsp] = the traced function's return address (rsp is its return
 * slot), arguments in registers, r11 = the stub's data, inside the reader
 * section.  The frame is the args-only struct __arch_ftrace_regs of
 * ftrace_caller, with sp = the return slot and ip = the body (site + 5).
 */
	.balign 16
	.globl	ftrace_graph_jmp_caller
	.hidden	ftrace_graph_jmp_caller
	.type	ftrace_graph_jmp_caller, @function
ftrace_graph_jmp_caller:
	.cfi_startproc
	leaq	-GJ_FRAME(%rsp), %rsp
	.cfi_adjust_cfa_offset GJ_FRAME
	SAVE_ARGS
	.cfi_rel_offset rbp, USFT_PTREGS_BP
	movq	%r11, GJ_DATA(%rsp)
	movq	$0, USFT_PTREGS_ORIG_AX(%rsp)
	movq	$0, USFT_PTREGS_CS(%rsp)
	movq	%rsp, %rbp			/* C: aligned stack (rbp is in the frame) */
	.cfi_def_cfa_register rbp
	andq	$-16, %rsp
	movq	GS_TPOFF(%r11), %rax
	cmpl	$0, %fs:TASK_STATE(%rax)
	je	.Lgj_register			/* first entry of this thread */
.Lgj_registered:
	movq	GS_IP(%r11), %rdi		/* ip, parent ip, op, fregs */
	leaq	5(%rdi), %rax			/* the body: site + MCOUNT_INSN_SIZE */
	movq	%rax, USFT_PTREGS_IP(%rbp)
	leaq	GJ_FRAME(%rbp), %rsi
	movq	%rsi, USFT_PTREGS_SP(%rbp)
	movq	(%rsi), %rsi
	movq	%rsi, GJ_BEFORE(%rbp)
	movq	GS_OPS(%r11), %rdx
	movq	%rbp, %rcx
	call	*GS_FUNC(%r11)
	movq	%rbp, %rsp
	.cfi_def_cfa_register rsp
	movq	GJ_DATA(%rsp), %r11
	movq	GS_TPOFF(%r11), %r11
	SPAN_EXIT %r11, %rax
	/* hooked now, and not before (a tail call from a hooked frame)? */
	leaq	return_to_handler(%rip), %r11
	cmpq	%r11, GJ_FRAME(%rsp)
	jne	.Lgj_plain
	cmpq	%r11, GJ_BEFORE(%rsp)
	je	.Lgj_plain
	RESTORE_ARGS
	movq	USFT_PTREGS_IP(%rsp), %r11
	.cfi_remember_state
	leaq	GJ_FRAME+8(%rsp), %rsp	/* the slot is dropped ... */
	.cfi_def_cfa_offset 0
	.cfi_undefined rip			/* the real one is on the shadow stack */
	call	*%r11				/* ... and refilled by this call */
	.globl	ftrace_graph_jmp_ret
	.hidden	ftrace_graph_jmp_ret
ftrace_graph_jmp_ret:
	GRAPH_RETURN
	pushq	%r11
	.cfi_adjust_cfa_offset 8
	ret
	int3
	.cfi_restore_state
.Lgj_plain:
	RESTORE_ARGS
	movq	USFT_PTREGS_IP(%rsp), %r11
	leaq	GJ_FRAME(%rsp), %rsp
	.cfi_adjust_cfa_offset -GJ_FRAME
	jmp	*%r11
	int3
.Lgj_register:					/* out of line: no branch taken above */
	.cfi_def_cfa rbp, GJ_FRAME + 8		/* as at the je */
	call	*GS_REGFN(%r11)
	movq	GJ_DATA(%rbp), %r11
	jmp	.Lgj_registered
	.cfi_endproc
	.size	ftrace_graph_jmp_caller, . - ftrace_graph_jmp_caller
