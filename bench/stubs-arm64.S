/* SPDX-License-Identifier: MIT */
/*
 * Stubs for the benchmarks, arm64 counterpart of stubs-x86_64.S.  Direct
 * trampolines follow the kernel's arm64 convention (docs/arm64.md): entered
 * by the site's BL (or ftrace_caller's br x17) with x9 = the traced
 * function's return address into its caller and x30 = the return into its
 * body; they go back into the body with x30 = x9 again.
 */
	.section .note.GNU-stack, "", %progbits
	.text

/* the empty direct trampoline (kernel: ftrace_stub_direct_tramp) */
	.globl	bench_empty_tramp
	.type	bench_empty_tramp, %function
	.balign 16
bench_empty_tramp:
	hint	#34			/* bti c */
	mov	x10, x30
	mov	x30, x9
	ret	x10
	.size	bench_empty_tramp, . - bench_empty_tramp

/*
 * The copyable "jmp-mode" trampoline.  arm64 has no jmp mode: a jmp-marked
 * direct address is called like any other, so this is entered like the
 * call-mode one and continues into the body through x30.  The data word
 * the benchmark fills with the body's address (at the end, as on x86-64)
 * is not needed here.
 */
	.globl	bench_jmp_tramp_start
	.globl	bench_jmp_tramp_end
	.balign 16
bench_jmp_tramp_start:
	hint	#34
	mov	x10, x30
	mov	x30, x9
	ret	x10
	.balign 8
	.quad	0
bench_jmp_tramp_end:

/* A copyable call-mode empty trampoline (position independent). */
	.globl	bench_ret_tramp_start
	.globl	bench_ret_tramp_end
	.balign 16
bench_ret_tramp_start:
	hint	#34
	mov	x10, x30
	mov	x30, x9
	ret	x10
bench_ret_tramp_end:

/*
 * The physical limit: a function whose entry really is what an enabled
 * site is (MOV X9, X30; BL <empty stub>), compiled in, no patching.
 */
	.globl	bench_stub_call_target
	.type	bench_stub_call_target, %function
	.balign 16
bench_stub_call_target:
	mov	x9, x30
	bl	bench_empty_tramp
	add	x0, x0, #1
	ret
	.size	bench_stub_call_target, . - bench_stub_call_target
