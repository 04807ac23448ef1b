/* SPDX-License-Identifier: MIT */
/* direct trampolines counting their calls (x86-64 call mode) */
	.section .note.GNU-stack, "", @progbits
	.text
	.balign 16
	.globl	model_tramp_a
	.type	model_tramp_a, @function
model_tramp_a:
	lock incq model_hits_a(%rip)
	ret
	.size	model_tramp_a, . - model_tramp_a
	.balign 16
	.globl	model_tramp_b
	.type	model_tramp_b, @function
model_tramp_b:
	lock incq model_hits_b(%rip)
	ret
	.size	model_tramp_b, . - model_tramp_b
