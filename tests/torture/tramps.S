/* SPDX-License-Identifier: MIT */
/*
 * Direct trampolines of the torture suite (x86-64 call mode): entered by
 * the site's call with [rsp] = site + 5, they count and return into the
 * function body.  No register but flags is touched.
 */
	.section .note.GNU-stack, "", @progbits
	.text
	.balign 16
	.globl	tt_tramp_a
	.type	tt_tramp_a, @function
tt_tramp_a:
	lock incq tt_direct_hits_a(%rip)
	ret
	.size	tt_tramp_a, . - tt_tramp_a
	.balign 16
	.globl	tt_tramp_b
	.type	tt_tramp_b, @function
tt_tramp_b:
	lock incq tt_direct_hits_b(%rip)
	ret
	.size	tt_tramp_b, . - tt_tramp_b
