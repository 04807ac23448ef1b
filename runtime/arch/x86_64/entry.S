/* SPDX-License-Identifier: MIT */
/*
 * arch/x86_64/entry.S - templates of ftrace_caller and ftrace_regs_caller
 * (arch/x86/kernel/ftrace_64.S).  They are never executed in place: the
 * runtime copies them into trampoline memory near the text they serve
 * (one shared copy per window, plus one per ops for the per-ops
 * trampolines) and fills the data words at their end.  Every memory
 * reference is RIP-relative to the template's own data, so a copy needs no
 * relocation.
 *
 * Entry: [rsp] = site + 5 (return into the function body),
 *        [rsp+8] = the traced function's return address; rsp = 0 mod 16.
 * The frame is struct __arch_ftrace_regs (usft/asm/x86_64.h).
 */
#include <usft/asm/x86_64.h>
#include "asm/entry.h"
#include "asm/event.h"

	.section .note.GNU-stack, "", @progbits
	.text

/* tasks-RCU entry mark + first-entry registration; \data = template data base */
.macro TASK_MARK tpoff
	movq	\tpoff(%rip), %r11
	SPAN_ENTER %r11
.endm

/*
 * First entry of this thread: register it for grace periods.  The call is
 * out of line (TASK_ENTER_OOL after the template's ret), so the common case
 * takes no branch.
 */
.macro TASK_ENTER tpoff, ool, back
	movq	\tpoff(%rip), %r11
	cmpl	$0, %fs:TASK_STATE(%r11)
	je	\ool
\back:
.endm

.macro TASK_ENTER_OOL regfn, ool, back
\ool:
	movq	%rsp, %rbp		/* C: aligned stack (rbp is in the frame) */
	andq	$-16, %rsp
	call	*\regfn(%rip)
	movq	%rbp, %rsp
	jmp	\back
.endm

/* rax is free wherever this is used (restored from the frame after) */
.macro TASK_EXIT tpoff
	movq	\tpoff(%rip), %r11
	SPAN_EXIT %r11, %rax
.endm

/* Args for the callback: ip (site), parent ip, op, fregs */
.macro SET_CALLBACK_ARGS
	movq	FRAME(%rsp), %rdi
	movq	%rdi, USFT_PTREGS_IP(%rsp)
	leaq	FRAME+8(%rsp), %rsi
	movq	%rsi, USFT_PTREGS_SP(%rsp)
	movq	(%rsi), %rsi
	subq	$5, %rdi
	movq	%rsp, %rcx
.endm

/*
 * The callback is C: call it with rsp 16-aligned whatever the traced
 * function got (see SAVE_ARGS).  rbp is saved in the frame and restored
 * from it on every way out.
 */
.macro ALIGN_STACK
	movq	%rsp, %rbp
	andq	$-16, %rsp
.endm
.macro UNALIGN_STACK
	movq	%rbp, %rsp
.endm

/*
 * The op load and the callback call.  Shared copies go through a pointer
 * to the global (two loads); a per-ops copy gets the disp32 of each load
 * re-pointed at its own datum and the second load turned into a NOP / the
 * call made register-indirect (kernel: the op_ptr fix-up of
 * create_trampoline()).  Byte layout relied on by arch/x86_64/ftrace.c:
 *   op_ptr: 48 8b 15 <disp32>   movq opp(%rip), %rdx
 *           48 8b 12            movq (%rdx), %rdx      -> 0f 1f 00
 *   call:   48 8b 05 <disp32>   movq funcp(%rip), %rax
 *           ff 10               call *(%rax)           -> ff d0
 */
.macro LOAD_OP opp
	movq	\opp(%rip), %rdx
	movq	(%rdx), %rdx
.endm
.macro CALL_FUNC funcp
	movq	\funcp(%rip), %rax
	call	*(%rax)
.endm

/* ftrace_override_function_with_return() target */
	.balign 16
	.globl	usft_just_return
	.type	usft_just_return, @function
usft_just_return:
	ret
	int3
	.size	usft_just_return, . - usft_just_return

/*
 * ftrace_stub_direct_tramp: a direct trampoline that does nothing (call
 * mode: [rsp] is the return into the function body).  16-byte aligned, so
 * bit 0 of its address is never read as the jmp bit.
 */
	.balign 16
	.globl	ftrace_stub_direct_tramp
	.type	ftrace_stub_direct_tramp, @function
ftrace_stub_direct_tramp:
	ret
	int3
	.size	ftrace_stub_direct_tramp, . - ftrace_stub_direct_tramp

/* ------------------------------------------------------------------ */
/*
 * The ftrace_caller template, twice: as the kernel's (every argument
 * register saved, xmm0-7 too, since a C callback may use them) and as
 * ftrace_caller_novec, which leaves xmm0-7 alone.  A per-ops trampoline
 * gets a copy of each; a site whose function's DWARF shows that it takes
 * no floating-point or vector argument calls the second (arch/x86_64/
 * ftrace.c: site_novec(); docs/design.md).  The two have one frame layout,
 * so struct ftrace_regs is the same either way.
 */
.macro CALLER_TMPL name, marked, op_ptr, call, data, end, vec
	.balign 16
	.globl	\name
	.type	\name, @function
\name:
	TASK_MARK .L\name\()_tpoff
	/* ftrace_event_caller's way into a copy: its own mark stands for this one */
	.globl	\marked
\marked:
	leaq	-FRAME(%rsp), %rsp
	SAVE_GPRS
	.if \vec
	SAVE_XMM
	.endif
	movq	$0, USFT_PTREGS_ORIG_AX(%rsp)
	movq	$0, USFT_PTREGS_CS(%rsp)
	TASK_ENTER .L\name\()_tpoff, .L\name\()_reg, .L\name\()_reg_back
	SET_CALLBACK_ARGS
	ALIGN_STACK
	.globl	\op_ptr
\op_ptr:
	LOAD_OP .L\name\()_opp
	.globl	\call
\call:
	CALL_FUNC .L\name\()_funcp
	UNALIGN_STACK
	/* a callback may redirect the return (IPMODIFY) */
	movq	USFT_PTREGS_IP(%rsp), %rax
	movq	%rax, FRAME(%rsp)
	TASK_EXIT .L\name\()_tpoff
	.if \vec
	RESTORE_XMM
	.endif
	RESTORE_GPRS
	leaq	FRAME(%rsp), %rsp
	ret
	int3
	TASK_ENTER_OOL .L\name\()_regfn, .L\name\()_reg, .L\name\()_reg_back
	int3
	.balign 8
	.globl	\data
\data:
.L\name\()_tpoff:	.quad 0		/* TLS offset of usft_task */
.L\name\()_regfn:	.quad 0		/* &usft_task_register */
.L\name\()_opp:	.quad 0		/* &word holding the ops */
.L\name\()_funcp:	.quad 0		/* &word holding the callback */
.L\name\()_opv:	.quad 0		/* per-ops copies: the ops */
.L\name\()_funcv:	.quad 0		/* per-ops copies: the callback */
	.globl	\end
\end:
	.size	\name, . - \name
.endm

	CALLER_TMPL ftrace_caller, ftrace_caller_marked, ftrace_caller_op_ptr, ftrace_call, \
		ftrace_caller_data, ftrace_caller_end, 1
	CALLER_TMPL ftrace_caller_novec, ftrace_caller_novec_marked, ftrace_caller_novec_op_ptr, \
		ftrace_call_novec, ftrace_caller_novec_data, ftrace_caller_novec_end, 0

/* ------------------------------------------------------------------ */
/*
 * ftrace_event_caller: the per-ops trampoline of an ops described by
 * ftrace_ops_set_event() (core/ops_event.h): it writes the callback's
 * 3-word event into the calling thread's ring itself, with the steps of
 * usft_tbuf_write() (tracers/ring_buffer.h) in the same order, and saves
 * only the registers it uses.  Every other case enters the ops' ordinary
 * copy of ftrace_caller (.Le_slowv: just past that copy's TASK_MARK, so
 * the span entered here is the one its exit leaves) with every register
 * as the site left it; nothing is written on those ways.
 */
#define EVT_RET	40	/* [rsp + EVT_RET]: the return into the body, after 5 pushes */

/* kernel rb_end_commit(): publish; again if a signal handler reserved meanwhile */
.macro EVT_COMMIT done
.Le_commit\@:
	movq	EVT_TB_HEAD(%rcx), %rax
	movq	%rax, EVT_TB_COMMIT(%rcx)
	movl	$0, EVT_TB_NEST(%rcx)
	cmpq	EVT_TB_HEAD(%rcx), %rax
	je	\done
	movl	$1, EVT_TB_NEST(%rcx)
	jmp	.Le_commit\@
.endm

	.balign 16
	.globl	ftrace_event_caller
	.type	ftrace_event_caller, @function
ftrace_event_caller:
	TASK_MARK .Le_tpoff
	cmpl	$0, %fs:TASK_STATE(%r11)	/* not registered yet: the copy does it */
	je	.Le_slow_early
	pushq	%rax
	pushq	%rdx
	pushq	%rcx
	pushq	%rsi
	pushq	%r10
	/* the callback is still the one this was built for (else: the stub) */
	movq	.Le_funcw(%rip), %rax
	movq	(%rax), %rax
	cmpq	.Le_fastv(%rip), %rax
	jne	.Le_slow
	movq	.Le_on(%rip), %rax
	cmpl	$0, (%rax)
	je	.Le_out				/* tracing off: the callback returns too */
	movq	.Le_slot(%rip), %r11
	movq	%fs:(%r11), %rcx
	cmpq	$2, %rcx			/* no slot yet, none possible, usft's own */
	jbe	.Le_slow
	/* the clock first, as trace_clock_read() in the callback */
	movq	.Le_clock(%rip), %r10
	movl	EVT_CLK_KIND(%r10), %eax
	cmpl	$EVT_KIND_PVCLOCK, %eax
	je	.Le_pv
	cmpl	$EVT_KIND_COUNTER, %eax
	jne	.Le_slow
	rdtsc
	shlq	$32, %rdx
	orq	%rdx, %rax
	subq	EVT_CLK_C0(%r10), %rax
	mulq	EVT_CLK_MULT(%r10)
	shrdq	$32, %rdx, %rax
	addq	EVT_CLK_T0(%r10), %rax
.Le_clock_done:
	movq	%rax, %rsi			/* ns */
	/* begin + reserve: nothing nested here, room before the limit */
	cmpq	$0, EVT_TB_NEST(%rcx)		/* nest and reserving */
	jne	.Le_slow
	movl	$1, EVT_TB_NEST(%rcx)
	movl	$1, EVT_TB_RESERVING(%rcx)
	movq	EVT_TB_HEAD(%rcx), %r11
	leaq	EVT_WORDS*8(%r11), %rax
	cmpq	EVT_TB_LIMIT(%rcx), %rax
	ja	.Le_full
	movq	%rax, EVT_TB_HEAD(%rcx)
	movl	$0, EVT_TB_RESERVING(%rcx)
	/* w0: time since the session's base, and the CPU */
	movq	.Le_base(%rip), %rax
	subq	(%rax), %rsi
	movabsq	$EVT_TS_MASK, %rax
	andq	%rax, %rsi
	movq	EVT_TB_CPU(%rcx), %rax
	movl	(%rax), %eax
	andl	$EVT_CPU_MASK, %eax
	shlq	$EVT_CPU_SHIFT, %rax
	orq	%rax, %rsi
	shrq	$3, %r11			/* the first word's index */
	movq	EVT_TB_WMASK(%rcx), %rdx
	movq	EVT_TB_DATA(%rcx), %r10
	movq	%r11, %rax
	andq	%rdx, %rax
	movq	%rsi, (%r10,%rax,8)
	/*
	 * Ownership of the line 2 KiB ahead: the writer, reading on another
	 * CPU, holds the lines of the lap before (a NOP where the CPU has no
	 * PREFETCHW: arch/x86_64/ftrace.c)
	 */
	leaq	EVT_PREFETCH/8(%r11), %rsi
	andq	%rdx, %rsi
	.globl	ftrace_event_caller_prefetch
ftrace_event_caller_prefetch:
	prefetchw	(%r10,%rsi,8)
	/* w1: the site (ip) and the type */
	movq	EVT_RET(%rsp), %rsi
	subq	$5, %rsi
	shlq	$64-EVT_IP_BITS, %rsi
	shrq	$64-EVT_IP_BITS, %rsi
	orq	.Le_w1(%rip), %rsi
	leaq	1(%r11), %rax
	andq	%rdx, %rax
	movq	%rsi, (%r10,%rax,8)
	/* w2: the parent ip */
	movq	EVT_RET+8(%rsp), %rsi
	leaq	2(%r11), %rax
	andq	%rdx, %rax
	movq	%rsi, (%r10,%rax,8)
	EVT_COMMIT .Le_out
.Le_out:
	movq	.Le_tpoff(%rip), %r11
	SPAN_EXIT %r11, %rax
	popq	%r10
	popq	%rsi
	popq	%rcx
	popq	%rdx
	popq	%rax
	ret
	int3
.Le_full:
	/* the ring is full or its next pages are not there: the callback's way */
	movl	$0, EVT_TB_RESERVING(%rcx)
	EVT_COMMIT .Le_slow
.Le_slow:
	popq	%r10
	popq	%rsi
	popq	%rcx
	popq	%rdx
	popq	%rax
.Le_slow_early:
	jmp	*.Le_slowv(%rip)
	int3
/* arch_pvclock_read(): the sequence, the clamp, the signed shift; rcx is the slot */
.Le_pv:
	pushq	%rcx
	movq	EVT_CLK_PVTI(%r10), %rsi
.Le_pv_again:
	movl	EVT_PV_VERSION(%rsi), %r11d
	rdtsc
	shlq	$32, %rdx
	orq	%rdx, %rax
	subq	EVT_PV_TSC(%rsi), %rax
	jns	1f
	xorl	%eax, %eax
1:	movsbl	EVT_PV_SHIFT(%rsi), %ecx
	testl	%ecx, %ecx
	js	2f
	shlq	%cl, %rax
	jmp	3f
2:	negl	%ecx
	shrq	%cl, %rax
3:	movl	EVT_PV_MUL(%rsi), %edx
	mulq	%rdx
	shrdq	$32, %rdx, %rax
	addq	EVT_PV_SYS(%rsi), %rax
	movzbl	EVT_PV_FLAGS(%rsi), %edx
	cmpl	EVT_PV_VERSION(%rsi), %r11d
	jne	.Le_pv_again
	testl	$1, %r11d
	jnz	.Le_pv_again
	popq	%rcx
	testl	$EVT_PV_STABLE, %edx
	jz	.Le_slow			/* the callback falls back to the vDSO */
	addq	EVT_CLK_PVOFF(%r10), %rax
	jmp	.Le_clock_done
	int3
	.balign 8
	.globl	ftrace_event_caller_data
ftrace_event_caller_data:
.Le_tpoff:	.quad 0		/* TLS offset of usft_task */
.Le_slowv:	.quad 0		/* the ops' copy of ftrace_caller, past its TASK_MARK */
.Le_funcw:	.quad 0		/* &that copy's callback word (in its twin) */
.Le_fastv:	.quad 0		/* the callback this copy stands for */
.Le_on:		.quad 0		/* ftrace_ops_event: on */
.Le_slot:	.quad 0		/* slot_tpoff */
.Le_clock:	.quad 0		/* clock */
.Le_base:	.quad 0		/* base */
.Le_w1:		.quad 0		/* w1_bits */
	.globl	ftrace_event_caller_end
ftrace_event_caller_end:
	.size	ftrace_event_caller, . - ftrace_event_caller

/* ------------------------------------------------------------------ */
	.balign 16
	.globl	ftrace_regs_caller
	.type	ftrace_regs_caller, @function
ftrace_regs_caller:
	TASK_MARK .Lr_tpoff
	leaq	-FRAME(%rsp), %rsp
	pushfq
	popq	USFT_PTREGS_FLAGS(%rsp)
	SAVE_ARGS
	movq	%r15, USFT_PTREGS_R15(%rsp)
	movq	%r14, USFT_PTREGS_R14(%rsp)
	movq	%r13, USFT_PTREGS_R13(%rsp)
	movq	%r12, USFT_PTREGS_R12(%rsp)
	movq	%r11, USFT_PTREGS_R11(%rsp)
	movq	%rbx, USFT_PTREGS_BX(%rsp)
	movq	$0, USFT_PTREGS_ORIG_AX(%rsp)
	movq	$0x33, USFT_PTREGS_CS(%rsp)	/* user CS: marks a full pt_regs */
	movq	$0x2b, USFT_PTREGS_SS(%rsp)
	TASK_ENTER .Lr_tpoff, .Lr_reg, .Lr_reg_back
	SET_CALLBACK_ARGS
	ALIGN_STACK
	.globl	ftrace_regs_caller_op_ptr
ftrace_regs_caller_op_ptr:
	LOAD_OP .Lr_opp
	.globl	ftrace_regs_call
ftrace_regs_call:
	CALL_FUNC .Lr_funcp
	UNALIGN_STACK
	movq	USFT_PTREGS_IP(%rsp), %rax
	movq	%rax, FRAME(%rsp)
	TASK_EXIT .Lr_tpoff
	movq	USFT_PTREGS_R15(%rsp), %r15
	movq	USFT_PTREGS_R14(%rsp), %r14
	movq	USFT_PTREGS_R13(%rsp), %r13
	movq	USFT_PTREGS_R12(%rsp), %r12
	movq	USFT_PTREGS_R11(%rsp), %r11
	movq	USFT_PTREGS_BX(%rsp), %rbx
	/* a direct trampoline was requested by call_direct_funcs() */
	movq	USFT_PTREGS_ORIG_AX(%rsp), %rax
	testq	%rax, %rax
	.globl	ftrace_regs_caller_jmp
ftrace_regs_caller_jmp:
	jnz	.Lr_direct
	RESTORE_ARGS
	pushq	USFT_PTREGS_FLAGS(%rsp)
	popfq
	leaq	FRAME(%rsp), %rsp
	ret
	int3
.Lr_direct:
	testq	$1, %rax
	jnz	.Lr_direct_jmp
	/*
	 * call mode: put the target just below the return-into-body slot
	 * (the last word of the frame, free once xmm7 is restored) and
	 * "return" into it: the trampoline sees [rsp] = return into the body,
	 * as after a call from the site.
	 */
	RESTORE_XMM
	movq	%rax, FRAME-8(%rsp)
	RESTORE_GPRS
	pushq	USFT_PTREGS_FLAGS(%rsp)
	popfq
	leaq	FRAME-8(%rsp), %rsp
	/* keep the return stack buffer balanced, as the kernel does */
	call	3f
	int3
3:	addq	$8, %rsp
	ret
	int3
.Lr_direct_jmp:
	/* jmp mode: the target takes the return-into-body slot */
	andq	$-2, %rax
	movq	%rax, FRAME(%rsp)
	RESTORE_ARGS
	pushq	USFT_PTREGS_FLAGS(%rsp)
	popfq
	leaq	FRAME(%rsp), %rsp
	ret
	int3
	TASK_ENTER_OOL .Lr_regfn, .Lr_reg, .Lr_reg_back
	int3
	.balign 8
	.globl	ftrace_regs_caller_data
ftrace_regs_caller_data:
.Lr_tpoff:	.quad 0
.Lr_regfn:	.quad 0
.Lr_opp:	.quad 0
.Lr_funcp:	.quad 0
.Lr_opv:	.quad 0
.Lr_funcv:	.quad 0
	.globl	ftrace_regs_caller_end
ftrace_regs_caller_end:
	.size	ftrace_regs_caller, . - ftrace_regs_caller
