/* SPDX-License-Identifier: MIT */
/*
 * arch/arm64/asm/uc_regs.h - the machine state of a signal context (the
 * kernel's instruction_pointer() of arch/arm64/include/asm/ptrace.h, on a
 * ucontext_t).
 */
#ifndef USFT_ARM64_ASM_PTRACE_H
#define USFT_ARM64_ASM_PTRACE_H

#include <ucontext.h>

/* the interrupted program counter */
static inline unsigned long usft_uc_pc(const ucontext_t *uc)
{
	return (unsigned long)uc->uc_mcontext.pc;
}

/* resume the interrupted context at @pc (an exception-table fixup) */
static inline void usft_uc_set_pc(ucontext_t *uc, unsigned long pc)
{
	uc->uc_mcontext.pc = pc;
}

#endif
