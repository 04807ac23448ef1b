/* SPDX-License-Identifier: MIT */
/*
 * tests/lifecycle/gccnops.c's loaded objects, written in assembly so that
 * each site's bytes and alignment are exact whatever compiler builds the
 * tests:
 *
 *   gn_run      gcc's five 1-byte NOPs (the run usft converts)
 *   gn_x12..14  a clang-style 5-byte NOP at 12, 13 and 14 mod 16: the
 *               site crosses a 16-byte boundary
 *   gn_x15      (GN_SITE15: the only function) a site at 15 mod 16
 *
 * Each returns its argument plus a constant, so a caller sees a corrupted
 * site as a wrong value or a crash.
 */
#define FN(name, pad, insn, k)				\
	.p2align 4;					\
	.skip pad, 0xcc;				\
	.globl name;					\
	.type name, @function;				\
name:;							\
1:	insn;						\
	mov %rdi, %rax;					\
	add $k, %rax;					\
	ret;						\
	.size name, . - name;				\
	.pushsection __patchable_function_entries, "aw", @progbits; \
	.quad 1b;					\
	.popsection

#define NOP1 .byte 0x90, 0x90, 0x90, 0x90, 0x90
#define NOP5 .byte 0x0f, 0x1f, 0x44, 0x00, 0x00

	.text
#ifndef GN_SITE15
FN(gn_run, 16, NOP1, 1)
FN(gn_x12, 12, NOP5, 12)
FN(gn_x13, 13, NOP5, 13)
FN(gn_x14, 14, NOP5, 14)
#else
FN(gn_x15, 15, NOP5, 15)
#endif
	.section .note.GNU-stack, "", @progbits
