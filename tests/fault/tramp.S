/* SPDX-License-Identifier: MIT */
	.section .note.GNU-stack, "", @progbits
	.text
	.globl	fault_ret_tramp
	.type	fault_ret_tramp, @function
fault_ret_tramp:
	ret
	.size	fault_ret_tramp, . - fault_ret_tramp
