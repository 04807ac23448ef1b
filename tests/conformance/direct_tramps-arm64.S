/* SPDX-License-Identifier: MIT */
/*
 * Direct trampolines for the direct-call conformance suites, arm64 version
 * of direct_tramps.S (same symbols, same helpers), written to the kernel's
 * arm64 direct-call convention (docs/arm64.md "Direct calls"):
 *
 *   entry: by the site's BL, or by ftrace_caller's br x17 when the site
 *     goes through the caller (out of BL range, shared, direct_calls=0);
 *     x9 = the traced function's return address into its caller (the
 *     site's MOV X9, X30), x30 = the return into its body (site + 4),
 *     sp = the function's entry sp (16-byte aligned), x0-x8 = arguments,
 *     x9-x17 free.
 *   exit: into the body with x30 = the caller's return address again
 *     (mov x30, x9; ret <body>): RET needs no BTI landing pad in the body.
 *
 *   tramp_a, tramp_b (call mode): save x0-x8, call the helper with
 *     (arg0, x30 = site + 4), restore, return into the body.
 *
 *   tramp_jmp: arm64 has no jmp mode (a jmp-marked address is called like
 *     any other), so this is entered exactly like tramp_a.  It hands the
 *     helper the caller's return address (x9) and returns through
 *     direct_jmp_body (site + 4, set by the test) the way x86's tramp_jmp
 *     jumps there.
 *
 *   far_tramp_start..far_tramp_end: a position-independent trampoline to be
 *     copied with usft_alloc_trampoline().  It loads a pointer from its own
 *     data slot (far_tramp_slot, filled by the test in its copy), increments
 *     *(ptr) atomically and stores x30 (site + 4) at *(ptr + 8).  It uses
 *     only x10-x13 (never an argument register).
 *
 * The helpers are notrace C functions in each test file:
 *   void direct_hit_a(unsigned long arg0, unsigned long ret_into_body);
 *   void direct_hit_b(unsigned long arg0, unsigned long ret_into_body);
 *   void direct_hit_jmp(unsigned long arg0, unsigned long caller_ret);
 */
	.section .note.GNU-stack, "", %progbits

	.data
	.balign 8
	.globl	direct_jmp_body
	.type	direct_jmp_body, %object
direct_jmp_body:
	.quad	0
	.size	direct_jmp_body, 8

	.text

/* frame: x29/x30 record, x0-x8, x9: 96 bytes */
.macro SAVE_ARGS
	stp	x29, x30, [sp, #-96]!
	mov	x29, sp
	stp	x0, x1, [sp, #16]
	stp	x2, x3, [sp, #32]
	stp	x4, x5, [sp, #48]
	stp	x6, x7, [sp, #64]
	stp	x8, x9, [sp, #80]
.endm

.macro RESTORE_ARGS
	ldp	x8, x9, [sp, #80]
	ldp	x6, x7, [sp, #64]
	ldp	x4, x5, [sp, #48]
	ldp	x2, x3, [sp, #32]
	ldp	x0, x1, [sp, #16]
	ldp	x29, x30, [sp], #96
.endm

.macro CALL_TRAMP name, helper
	.balign 16
	.globl	\name
	.type	\name, %function
\name:
	hint	#34			/* bti c: reached by BL or br x17 */
	SAVE_ARGS
	mov	x1, x30			/* return into the body = site + 4 */
	bl	\helper			/* x0 = arg0 already */
	RESTORE_ARGS
	mov	x10, x30
	mov	x30, x9
	ret	x10
	brk	#0
	.size	\name, . - \name
.endm

	CALL_TRAMP tramp_a, direct_hit_a
	CALL_TRAMP tramp_b, direct_hit_b

	.balign 16
	.globl	tramp_jmp
	.type	tramp_jmp, %function
tramp_jmp:
	hint	#34			/* bti c */
	SAVE_ARGS
	mov	x1, x9			/* the caller's return address */
	bl	direct_hit_jmp
	RESTORE_ARGS
	adrp	x10, direct_jmp_body
	ldr	x10, [x10, :lo12:direct_jmp_body]
	mov	x30, x9
	ret	x10
	brk	#0
	.size	tramp_jmp, . - tramp_jmp

/* position-independent trampoline, copied by the tests */
	.balign 16
	.globl	far_tramp_start
	.globl	far_tramp_slot
	.globl	far_tramp_end
	.type	far_tramp_start, %function
far_tramp_start:
	hint	#34			/* bti c */
	ldr	x11, .Lfar_slot
1:	ldxr	x10, [x11]		/* atomic increment (no LSE needed) */
	add	x10, x10, #1
	stxr	w12, x10, [x11]
	cbnz	w12, 1b
	str	x30, [x11, #8]		/* site + 4 */
	mov	x10, x30
	mov	x30, x9
	ret	x10
	brk	#0
	.balign 8
far_tramp_slot:
.Lfar_slot:
	.quad	0
far_tramp_end:
	.size	far_tramp_start, . - far_tramp_start
