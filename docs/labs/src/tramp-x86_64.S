/* tramp-x86_64.S - lab 3: two direct trampolines for scale(x, y).
 *
 * Entered by the `call` at scale()'s site: [rsp] is the return address
 * into scale()'s body, rdi and rsi hold scale()'s arguments, rsp is 16-byte
 * aligned.  Each trampoline calls a C function with the same arguments and
 * returns into the body with rdi and rsi as they were.
 */
	.text

.macro TRAMP name, helper
	.globl	\name
	.type	\name, @function
	.p2align 4			/* bit 0 of the address is the jmp bit */
\name:
	pushq	%rbp			/* a frame, so debuggers can unwind */
	movq	%rsp, %rbp
	pushq	%rdi			/* the arguments: the helper may clobber them */
	pushq	%rsi
	subq	$8, %rsp		/* three pushes: 16-byte aligned again */
	call	\helper			/* helper(x, y): rdi and rsi still hold them */
	addq	$8, %rsp
	popq	%rsi
	popq	%rdi
	leave
	ret				/* into scale()'s body, past its site */
	.size	\name, . - \name
.endm

	TRAMP	tramp_a, seen_a
	TRAMP	tramp_b, seen_b

	.section .note.GNU-stack, "", @progbits
