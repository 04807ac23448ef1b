/* SPDX-License-Identifier: MIT */
/*
 * arch/arm64/asm/ftrace.h - arm64 constants for the core.
 *
 * Site states (rec->ip is the second patched NOP, the BL slot):
 *   compiled         NOP ; NOP                    (-fpatchable-function-entry=2)
 *   disabled         MOV X9, X30 ; NOP            (the MOV is written once, at load)
 *   enabled          MOV X9, X30 ; BL <target>    caller copy or direct trampoline
 * With -fpatchable-function-entry=4,2 (CALL_OPS) the two NOPs before the
 * function hold an 8-byte aligned ops pointer (the per-site literal) and a
 * BTI C may sit between the symbol and the first patched NOP.
 */
#ifndef USFT_ARM64_ASM_FTRACE_H
#define USFT_ARM64_ASM_FTRACE_H

#define MCOUNT_INSN_SIZE		4
#define ARCH_HAS_FTRACE_REPLACE_CODE	1
/* DYNAMIC_FTRACE_WITH_CALL_OPS: the core maintains FTRACE_FL_CALL_OPS */
#define USFT_HAVE_CALL_OPS		1

/* struct ftrace_ops offsets used by ftrace_caller_ops (checked in ftrace.c) */
#define USFT_OPS_FUNC			0
#define USFT_OPS_DIRECT_CALL		200

#endif
