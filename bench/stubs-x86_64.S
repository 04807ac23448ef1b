/* SPDX-License-Identifier: MIT */
/*
 * Stubs for the ladder benchmark (x86-64 conventions of
 * docs/architecture.md, "The dispatch ladder").
 */
	.section .note.GNU-stack, "", @progbits
	.text

/* the empty direct trampoline (kernel: ftrace_stub_direct_tramp) */
	.globl	bench_empty_tramp
	.type	bench_empty_tramp, @function
bench_empty_tramp:
	ret
	.size	bench_empty_tramp, . - bench_empty_tramp

/*
 * A copyable jmp-mode trampoline: entered by jmp with [rsp] = the caller's
 * return address; continues into the body whose address is in its data.
 */
	.globl	bench_jmp_tramp_start
	.globl	bench_jmp_tramp_end
bench_jmp_tramp_start:
	jmp	*1f(%rip)
	.balign 8
1:	.quad	0
bench_jmp_tramp_end:

/* A copyable call-mode empty trampoline. */
	.globl	bench_ret_tramp_start
	.globl	bench_ret_tramp_end
bench_ret_tramp_start:
	ret
bench_ret_tramp_end:

/*
 * The physical limit: a function whose entry really is `call <empty stub>`
 * (what a patched site becomes), compiled in, no patching involved.
 */
	.globl	bench_stub_call_target
	.type	bench_stub_call_target, @function
	.balign 16
bench_stub_call_target:
	call	bench_empty_tramp
	leaq	1(%rdi), %rax
	ret
	.size	bench_stub_call_target, . - bench_stub_call_target
