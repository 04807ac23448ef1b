/* SPDX-License-Identifier: MIT */
/*
 * Direct trampolines for the direct-call conformance suites, written to the
 * kernel's x86-64 conventions (samples/ftrace/ftrace-direct*.c,
 * arch/x86/kernel/ftrace_64.S, docs/architecture.md):
 *
 *   call mode (tramp_a, tramp_b): entered by the site's call (or the
 *     ftrace_regs_caller's orig_ax path), [rsp] = site + 5 = return into the
 *     function body, rsp = 0 mod 16.  Saves the argument registers and rax
 *     (vector count of variadic calls), calls a C helper, restores and rets
 *     into the body.
 *
 *   jmp mode (tramp_jmp): entered by the site's jmp (or the regs caller's
 *     jmp-mode return), [rsp] = the traced function's caller return address,
 *     rsp = 8 mod 16.  Saves the arguments, calls the helper, restores and
 *     jumps to the body at direct_jmp_body (site + 5, set by the test).
 *
 *   far_tramp_start..far_tramp_end: a position-independent call-mode
 *     trampoline to be copied with usft_alloc_trampoline().  It loads a
 *     pointer from its own data slot (far_tramp_slot, filled by the test in
 *     its copy of the bytes) and does  lock incq (ptr); *(ptr+8) = [rsp].
 *     It clobbers only r10, r11 and flags (never an argument register).
 *
 * The helpers are notrace C functions in each test file:
 *   void direct_hit_a(unsigned long arg0, unsigned long ret_into_body);
 *   void direct_hit_b(unsigned long arg0, unsigned long ret_into_body);
 *   void direct_hit_jmp(unsigned long arg0, unsigned long caller_ret);
 */
	.section .note.GNU-stack, "", @progbits

	.data
	.balign 8
	.globl	direct_jmp_body
	.type	direct_jmp_body, @object
direct_jmp_body:
	.quad	0
	.size	direct_jmp_body, 8

	.text

.macro SAVE_ARGS
	pushq	%rdi
	pushq	%rsi
	pushq	%rdx
	pushq	%rcx
	pushq	%r8
	pushq	%r9
	pushq	%rax
.endm

.macro RESTORE_ARGS
	popq	%rax
	popq	%r9
	popq	%r8
	popq	%rcx
	popq	%rdx
	popq	%rsi
	popq	%rdi
.endm

/* call mode: push rbp (rsp 8 mod 16) + 7 saves (56) -> 0 mod 16 at the call */
.macro CALL_TRAMP name, helper
	.balign 16
	.globl	\name
	.type	\name, @function
\name:
	pushq	%rbp
	movq	%rsp, %rbp
	SAVE_ARGS
	movq	8(%rbp), %rsi		/* return into the body = site + 5 */
	call	\helper			/* rdi = arg0 already */
	RESTORE_ARGS
	leave
	ret
	int3
	.size	\name, . - \name
.endm

	CALL_TRAMP tramp_a, direct_hit_a
	CALL_TRAMP tramp_b, direct_hit_b

/* jmp mode: entry rsp 8 mod 16; push rbp (0) + 7 saves (56) + 8 pad -> 0 */
	.balign 16
	.globl	tramp_jmp
	.type	tramp_jmp, @function
tramp_jmp:
	pushq	%rbp
	movq	%rsp, %rbp
	SAVE_ARGS
	subq	$8, %rsp
	movq	8(%rbp), %rsi		/* the caller's return address */
	call	direct_hit_jmp
	addq	$8, %rsp
	RESTORE_ARGS
	popq	%rbp
	jmp	*direct_jmp_body(%rip)
	int3
	.size	tramp_jmp, . - tramp_jmp

/* position-independent call-mode trampoline, copied by the tests */
	.balign 16
	.globl	far_tramp_start
	.globl	far_tramp_slot
	.globl	far_tramp_end
	.type	far_tramp_start, @function
far_tramp_start:
	movq	.Lfar_slot(%rip), %r11
	lock incq (%r11)
	movq	(%rsp), %r10
	movq	%r10, 8(%r11)
	ret
	int3
	.balign 8
far_tramp_slot:
.Lfar_slot:
	.quad	0
far_tramp_end:
	.size	far_tramp_start, . - far_tramp_start
