/* SPDX-License-Identifier: MIT */
/*
 * arch/x86_64/asm/ftrace.h - x86-64 constants for the core.
 *
 * Site states (5 bytes at rec->ip, after endbr64 when -fcf-protection):
 *   compiled (gcc)   90 90 90 90 90        five 1-byte NOPs
 *   compiled (clang) 0f 1f 44 00 08        one 5-byte NOP
 *   disabled         0f 1f 44 00 00        canonical nop5 (x86_nops[5])
 *   enabled          e8 <rel32>            call caller/trampoline/direct
 *   enabled, jmp     e9 <rel32>            direct target with the jmp bit
 *   transient        cc .. .. .. ..        INT3 while a batch is patched
 */
#ifndef USFT_X86_64_ASM_FTRACE_H
#define USFT_X86_64_ASM_FTRACE_H

#define MCOUNT_INSN_SIZE		5
/* rel32 reach (2 GiB) less a page: a whole window within it of a text range */
#define ARCH_NEAR_REACH			((1UL << 31) - 4096)
#define USFT_HAVE_WITH_REGS		1
/* fgraph jmp mode: the graph jmp caller's own return (core/fgraph.c) */
#define ARCH_HAS_FGRAPH_JMP_RET		1
/*
 * The trampolines' tasks-RCU span is the split counters span_in/span_out/
 * span_gen (asm/entry.h; core/internal.h says why), not nest/gen.
 */
#define ARCH_HAS_SPLIT_TASK_SPAN	1
/*
 * A BPF-like image reads its callback words from its data twin
 * (mem/execmem.h), RIP-relative: core/bpf_trampoline.c puts them there and
 * retires them with plain stores.  Per-ops copies and graph stubs do the
 * same (arch/x86_64/ftrace.c).
 */
#define ARCH_TRAMP_DATA_TWIN		1

#endif
